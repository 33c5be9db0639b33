import { describe, expectTypeOf, it } from 'vitest';
import { Switchboard, type CallInput } from '../../src/client/index.js';

// Checked by `npm run typecheck`: each @ts-expect-error fails the build if the types stop rejecting.
describe('SDK types', () => {
  it('reject a wrong body field, a wrong path parameter and a missing one', () => {
    const client = new Switchboard({ url: 'http://127.0.0.1:1', apiKey: 'sk_unused' });
    const calls = () => {
      // @ts-expect-error event_nam is not a field of a message
      void client.messaging.send({ body: { destination: 'a', event_nam: 'x' } });
      // @ts-expect-error tasks.get takes the path parameter id
      void client.tasks.get({ path: { task_id: 't' } });
      // @ts-expect-error the path parameter is required
      void client.coordination.getRun();
      // @ts-expect-error heartbeat load is a number
      void client.discovery.heartbeat({ body: { load: 'high' } });
    };
    expectTypeOf(calls).toBeFunction();
    expectTypeOf<CallInput<'tasks', 'get'>['path']>().toEqualTypeOf<Record<'id', string | number>>();
  });
});
