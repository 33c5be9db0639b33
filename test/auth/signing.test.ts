import { expect, it } from 'vitest';
import { sha256Hex } from '../../src/kernel/sha256.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { keyPair, signedHeaders } from '../helpers/signing.js';

describeEachDialect('Ed25519 request signing', (dialect) => {
  const server = useServer(dialect);
  const alice = keyPair();

  it('registers a raw base64 public key and authenticates signed requests', async () => {
    const added = await server.api.post('/api/v1/auth/agents/alice/public-keys', { public_key: alice.raw });
    expect(added.status).toBe(201);
    expect(added.body.data).toMatchObject({ agent_id: 'alice', public_key: alice.raw });
    const path = '/api/v1/auth/whoami?x=1';
    const res = await server.api.get(path, { key: null, headers: signedHeaders(alice.privateKey, 'alice', 'GET', path) });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ kind: 'agent', id: 'alice', role: 'agent', agent_id: 'alice', key_id: null, actor: 'alice' });
  });

  it('covers the body: a signed POST verifies, a tampered one does not', async () => {
    const other = keyPair();
    const path = '/api/v1/auth/agents/alice/public-keys';
    const body = JSON.stringify({ public_key: other.pem });
    const headers = { ...signedHeaders(alice.privateKey, 'alice', 'POST', path, body), 'content-type': 'application/json' };
    const ok = await server.api.post(path, body, { key: null, raw: true, headers });
    expect(ok.status).toBe(201);
    expect(ok.body.data.public_key).toBe(other.raw);
    const tamperedHeaders = {
      ...signedHeaders(alice.privateKey, 'alice', 'POST', path, body),
      'content-type': 'application/json',
    };
    const tampered = await server.api.post(path, body.replace('BEGIN', 'BEGIN '), { key: null, raw: true, headers: tamperedHeaders });
    expect(tampered.status).toBe(401);
  });

  it('trusts a declared X-Content-SHA256 only on routes that check it against the body', async () => {
    const dana = keyPair();
    expect((await server.api.post('/api/v1/auth/agents/dana/public-keys', { public_key: dana.raw })).status).toBe(201);
    // A signature over some other body's hash, sent with no body and that hash declared.
    const path = '/api/v1/auth/whoami';
    const otherBody = JSON.stringify({ anything: true });
    const headers = { ...signedHeaders(dana.privateKey, 'dana', 'GET', path, otherBody), 'x-content-sha256': sha256Hex(otherBody) };
    const forged = await server.api.get(path, { key: null, headers });
    expect(forged.status).toBe(401);
    expect(forged.body.error.message).toMatch(/signature/i);
    expect((await server.api.get(path, { key: null, headers: signedHeaders(dana.privateKey, 'dana', 'GET', path) })).status).toBe(200);
  });

  it('rejects stale, replayed, unknown-key and malformed signatures with 401', async () => {
    const path = '/api/v1/auth/whoami';
    const stale = signedHeaders(alice.privateKey, 'alice', 'GET', path, '', new Date(Date.now() - 301_000).toISOString());
    const staleRes = await server.api.get(path, { key: null, headers: stale });
    expect(staleRes.status).toBe(401);
    expect(staleRes.body.error.message).toMatch(/300 s/);

    const once = signedHeaders(alice.privateKey, 'alice', 'GET', path);
    expect((await server.api.get(path, { key: null, headers: once })).status).toBe(200);
    const replay = await server.api.get(path, { key: null, headers: once });
    expect(replay.status).toBe(401);
    expect(replay.body.error.message).toMatch(/replay/);

    const mallory = keyPair();
    const unknown = await server.api.get(path, { key: null, headers: signedHeaders(mallory.privateKey, 'mallory', 'GET', path) });
    expect(unknown.status).toBe(401);
    const impostor = await server.api.get(path, { key: null, headers: signedHeaders(mallory.privateKey, 'alice', 'GET', path) });
    expect(impostor.status).toBe(401);
    const wrongPath = await server.api.get(path, {
      key: null,
      headers: signedHeaders(alice.privateKey, 'alice', 'GET', '/api/v1/auth/keys'),
    });
    expect(wrongPath.status).toBe(401);
    const partial = await server.api.get(path, { key: null, headers: { 'x-agent-id': 'alice' } });
    expect(partial.status).toBe(401);
  });

  it('refuses a captured signature re-encoded in any other base64 text (replay), and still takes fresh ones', async () => {
    const erin = keyPair();
    expect((await server.api.post('/api/v1/auth/agents/erin/public-keys', { public_key: erin.raw })).status).toBe(201);
    const path = '/api/v1/auth/whoami';
    // A signature with a '+' or '/' in it, so that its url-safe text differs (they are signed over distinct timestamps).
    let captured = signedHeaders(erin.privateKey, 'erin', 'GET', path);
    for (let ms = 1; !/[+/]/.test(captured['x-signature']); ms++) {
      captured = signedHeaders(erin.privateKey, 'erin', 'GET', path, '', new Date(Date.now() - ms).toISOString());
    }
    const text = captured['x-signature'];
    expect(text).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    expect((await server.api.get(path, { key: null, headers: captured })).status).toBe(200);

    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    // The last character carries 2 bits of the signature and 4 unused ones.
    const unusedBitsFlipped = text.slice(0, 85) + alphabet[alphabet.indexOf(text[85]!) ^ 1] + '==';
    const variants = {
      'no padding': text.replace(/=+$/, ''),
      'one pad missing': text.slice(0, -1),
      'extra padding': `${text}=`,
      'unused bits flipped': unusedBitsFlipped,
      'url-safe alphabet': text.replace(/\+/g, '-').replace(/\//g, '_'),
      'trailing junk': `${text}!`,
      'trailing junk, many': `${text}!!!!!!`,
      'junk inside': `${text.slice(0, 40)}.${text.slice(40)}`,
      'leading junk': `*${text}`,
    };
    for (const [name, signature] of Object.entries(variants)) {
      expect(signature, name).not.toBe(text);
      const replay = await server.api.get(path, { key: null, headers: { ...captured, 'x-signature': signature } });
      expect({ name, status: replay.status, code: replay.body.error?.code }).toEqual({ name, status: 401, code: 'unauthorized' });
    }
    expect((await server.api.get(path, { key: null, headers: signedHeaders(erin.privateKey, 'erin', 'GET', path) })).status).toBe(200);
  });

  it('keeps signed agents to themselves (403) and validates keys (400)', async () => {
    const path = '/api/v1/auth/agents/bob/public-keys';
    const res = await server.api.get(path, { key: null, headers: signedHeaders(alice.privateKey, 'alice', 'GET', path) });
    expect(res.status).toBe(403);
    const bad = await server.api.post('/api/v1/auth/agents/bob/public-keys', { public_key: 'c2hvcnQ=' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('public_key');
    const dup = await server.api.post('/api/v1/auth/agents/alice/public-keys', { public_key: alice.pem });
    expect(dup.status).toBe(409);
  });

  it('lists and removes public keys; a removed key no longer verifies', async () => {
    const carol = keyPair();
    const added = await server.api.post('/api/v1/auth/agents/carol/public-keys', { public_key: carol.raw });
    const listed = await server.api.get('/api/v1/auth/agents/carol/public-keys');
    expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([added.body.data.id]);
    const removed = await server.api.delete(`/api/v1/auth/agents/carol/public-keys/${added.body.data.id}`);
    expect(removed.body.data).toEqual({ id: added.body.data.id, deleted: true });
    const path = '/api/v1/auth/whoami';
    expect((await server.api.get(path, { key: null, headers: signedHeaders(carol.privateKey, 'carol', 'GET', path) })).status).toBe(401);
    expect((await server.api.delete(`/api/v1/auth/agents/carol/public-keys/${added.body.data.id}`)).status).toBe(404);
  });
});
