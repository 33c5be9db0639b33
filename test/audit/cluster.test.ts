import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';

describeEachDialect('audit log across nodes', (dialect) => {
  const server = useServer(dialect);

  it('keeps one chain while two nodes on one database append at the same time', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey });
    try {
      const perNode = 15;
      const creates = [server.api, second.api].flatMap((api, node) =>
        Array.from({ length: perNode }, (_, i) => api.post('/core/api/v1/projects', { name: `node${node}-${i}` })),
      );
      expect((await Promise.all(creates)).map((res) => res.status)).toEqual(Array(2 * perNode).fill(201));
      const listed = await server.api.get('/api/v1/audit?action=project.create&limit=500');
      expect(listed.body.meta.total).toBe(2 * perNode);
      const verified = await second.api.get('/api/v1/audit/verify');
      expect(verified.body.data).toMatchObject({ ok: true, checked: 2 * perNode });
    } finally {
      await second.close();
    }
  });
});
