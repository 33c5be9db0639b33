import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { useServer } from '../helpers/server.js';
import { waitFor, within } from '../helpers/wait.js';

const NGINX = '/usr/sbin/nginx';
// .ci/run installs Debian's nginx; elsewhere the suite runs where it is installed.
const hasNginx = fs.existsSync(NGINX);

/** The nginx block of docs/cluster.md, exactly as a reader copies it. */
function documentedConfig(): string {
  const doc = fs.readFileSync(new URL('../../docs/cluster.md', import.meta.url), 'utf8');
  const block = /```nginx\n([\s\S]*?)```/.exec(doc.slice(doc.indexOf('## Behind a load balancer')));
  if (!block) throw new Error('docs/cluster.md has no nginx block under "Behind a load balancer"');
  return block[1]!;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.once('error', reject);
  });
}

/** An anonymous request through the proxy from `localAddress`, with a client-written X-Forwarded-For. */
function anonymousRequest(
  port: number,
  localAddress: string,
  forwardedFor?: string,
): Promise<{ status: number; remaining: string | undefined }> {
  return new Promise((resolve, reject) => {
    const headers = forwardedFor ? { 'x-forwarded-for': forwardedFor } : {};
    const request = http.get({ host: '127.0.0.1', port, path: '/api/v1/auth/whoami', localAddress, headers, agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode!, remaining: res.headers['x-ratelimit-remaining'] as string | undefined }));
    });
    request.once('error', reject);
  });
}

describe.skipIf(!hasNginx && !process.env.CI)('behind nginx configured as docs/cluster.md says', () => {
  // nginx reaches the server from 127.0.0.2 (proxy_bind): the only address the server trusts.
  const server = useServer('sqlite', {
    env: { SWITCHBOARD_TRUSTED_PROXIES: '127.0.0.2', SWITCHBOARD_RATE_LIMIT_ANONYMOUS: '2', SWITCHBOARD_RATE_WINDOW_S: '3600' },
  });
  let nginx: ChildProcess | undefined;
  let dir = '';
  let port = 0;

  beforeAll(async () => {
    port = await freePort();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-nginx-'));
    fs.chmodSync(dir, 0o755);
    const upstream = new URL(server.url).host;
    const site = documentedConfig()
      .replace(/(upstream switchboard \{\n)(?:\s*server [^\n]+\n)+/, `$1    server ${upstream};\n`)
      .replace('listen 443 ssl;', `listen 127.0.0.1:${port};`);
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => `${kind}_temp_path ${dir}/${kind};`).join('\n');
    fs.writeFileSync(
      path.join(dir, 'nginx.conf'),
      `daemon off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nworker_processes 1;\nevents { worker_connections 256; }\n` +
        `http {\naccess_log off;\n${temp}\nproxy_bind 127.0.0.2;\n${site}\n}\n`,
    );
    nginx = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: 'ignore' });
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect(port, '127.0.0.1', () => {
            socket.destroy();
            resolve(true);
          });
          socket.once('error', () => resolve(false));
        }),
      10_000,
    );
  });

  afterAll(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((resolve) => nginx!.once('exit', resolve));
      nginx.kill('SIGTERM');
      await exited;
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('passes the agent channel WebSocket upgrade on', async () => {
    const agent = await server.agent('proxied-1');
    const socket = new WebSocket(`ws://127.0.0.1:${port}/api/v1/messaging/channel`, { headers: { authorization: `Bearer ${agent.key}` } });
    try {
      await within(new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject)), 5_000, 'upgrade through nginx');
      const pushed = new Promise<any>((resolve) => socket.on('message', (data) => resolve(JSON.parse(String(data)))));
      socket.send(JSON.stringify({ credit: 1 }));
      const sent = await agent.post('/api/v1/messaging/send', { destination: 'proxied-1', event_name: 'work', payload: { via: 'nginx' } });
      expect(sent.status).toBe(201);
      const frame = await within(pushed, 5_000, 'pushed message');
      expect(frame.message).toMatchObject({ message_id: sent.body.data.message_id, payload: { via: 'nginx' } });
    } finally {
      socket.close();
    }
  });

  it('counts each client under its own address, whatever X-Forwarded-For the client wrote', async () => {
    // 127.0.0.1 claims to be 203.0.113.5: nginx appends the real address, the server takes that one.
    expect(await anonymousRequest(port, '127.0.0.1', '203.0.113.5')).toEqual({ status: 401, remaining: '1' });
    expect(await anonymousRequest(port, '127.0.0.1', '203.0.113.6')).toEqual({ status: 401, remaining: '0' });
    expect((await anonymousRequest(port, '127.0.0.1')).status).toBe(429);
    // Another client behind the same proxy keeps its own budget.
    expect(await anonymousRequest(port, '127.0.0.3')).toEqual({ status: 401, remaining: '1' });
  });
});
