import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { keyPair, signedHeaders } from '../helpers/signing.js';

const WHOAMI = '/api/v1/auth/whoami';

describeEachDialect('public keys go with the API key that registered them', (dialect) => {
  const server = useServer(dialect);

  async function agentKey(agentId: string): Promise<{ id: string; key: string }> {
    const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
    expect(res.status, res.text).toBe(201);
    return { id: res.body.data.id, key: res.body.data.key };
  }

  const signedWhoami = (privateKey: ReturnType<typeof keyPair>['privateKey'], agentId: string) =>
    server.api.get(WHOAMI, { key: null, headers: signedHeaders(privateKey, agentId, 'GET', WHOAMI) });

  it('revoking an agent key deletes the public keys it registered: their signatures get 401', async () => {
    const key = await agentKey('rev-a');
    const pair = keyPair();
    const added = await server.api.post('/api/v1/auth/agents/rev-a/public-keys', { public_key: pair.raw }, { key: key.key });
    expect(added.status, added.text).toBe(201);
    expect(added.body.data.registered_by_key_id).toBe(key.id);
    expect((await signedWhoami(pair.privateKey, 'rev-a')).status).toBe(200);

    const revoked = await server.api.delete(`/api/v1/auth/keys/${key.id}`);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.data).toEqual({
      id: key.id,
      deleted: true,
      public_keys_deleted: [added.body.data.id],
      public_keys_deleted_count: 1,
    });

    const refused = await signedWhoami(pair.privateKey, 'rev-a');
    expect(refused.status).toBe(401);
    expect((await server.api.get('/api/v1/auth/agents/rev-a/public-keys')).body.data).toEqual([]);
  });

  it('a public key registered by a signed request goes with the key behind the signing one', async () => {
    const key = await agentKey('rev-b');
    const first = keyPair();
    expect((await server.api.post('/api/v1/auth/agents/rev-b/public-keys', { public_key: first.raw }, { key: key.key })).status).toBe(201);
    const second = keyPair();
    const path = '/api/v1/auth/agents/rev-b/public-keys';
    const body = JSON.stringify({ public_key: second.raw });
    const headers = { ...signedHeaders(first.privateKey, 'rev-b', 'POST', path, body), 'content-type': 'application/json' };
    const chained = await server.api.post(path, body, { key: null, raw: true, headers });
    expect(chained.status, chained.text).toBe(201);
    expect(chained.body.data.registered_by_key_id).toBe(key.id);

    const revoked = await server.api.delete(`/api/v1/auth/keys/${key.id}`);
    expect(revoked.body.data.public_keys_deleted_count).toBe(2);
    expect((await signedWhoami(first.privateKey, 'rev-b')).status).toBe(401);
    expect((await signedWhoami(second.privateKey, 'rev-b')).status).toBe(401);
  });

  it("keeps an admin's public keys and other keys' ones when an agent key is revoked", async () => {
    const key = await agentKey('rev-c');
    const other = await agentKey('rev-c');
    const byAdmin = keyPair();
    const byOther = keyPair();
    const adminAdded = await server.api.post('/api/v1/auth/agents/rev-c/public-keys', { public_key: byAdmin.raw });
    expect(adminAdded.body.data.registered_by_key_id).toBeNull();
    expect((await server.api.post('/api/v1/auth/agents/rev-c/public-keys', { public_key: byOther.raw }, { key: other.key })).status).toBe(
      201,
    );

    const revoked = await server.api.delete(`/api/v1/auth/keys/${key.id}`);
    expect(revoked.body.data).toMatchObject({ public_keys_deleted: [], public_keys_deleted_count: 0 });
    expect((await signedWhoami(byAdmin.privateKey, 'rev-c')).status).toBe(200);
    expect((await signedWhoami(byOther.privateKey, 'rev-c')).status).toBe(200);
  });
});
