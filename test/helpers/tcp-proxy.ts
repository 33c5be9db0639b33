import net from 'node:net';

/**
 * A TCP proxy in front of a server (PostgreSQL), that a test can cut: every connection through it
 * is reset and new ones are refused until `restore()`, as when the database goes away, without
 * touching the database that other tests share.
 */
export interface TcpProxy {
  readonly port: number;
  /** Resets every open connection; new ones are refused. */
  cut(): Promise<void>;
  /** Accepts connections again (on the same port). */
  restore(): Promise<void>;
  /** Resets every open connection and keeps accepting (a dropped LISTEN connection). */
  reset(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server = listen(0);
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as net.AddressInfo).port;

  function listen(onPort: number): net.Server {
    const s = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    s.listen(onPort, '127.0.0.1');
    return s;
  }

  function reset(): void {
    for (const socket of sockets) socket.resetAndDestroy();
  }

  let listening = true;
  async function cut(): Promise<void> {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    reset();
    await closed;
  }
  return {
    port,
    reset,
    cut,
    async restore() {
      if (listening) return;
      server = listen(port);
      await new Promise<void>((resolve, reject) => {
        server.once('listening', resolve);
        server.once('error', reject);
      });
      listening = true;
    },
    close: cut,
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(proxy.port);
  return parsed.toString();
}
