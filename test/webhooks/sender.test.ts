import { describe, expect, it } from 'vitest';
import type { ReceiverGuard } from '../../src/webhooks/addresses.js';
import { WebhookSender } from '../../src/webhooks/sender.js';
import { startReceiver } from './receiver.js';

// Issue 34 item 15 (DNS rebinding): whatever resolved the receiver's name, the address the
// connection actually reached passes the guard before anything is sent.
describe('webhook sender: the address connected to', () => {
  it('is checked once connected, and nothing is sent to one the guard refuses', async () => {
    const receiver = await startReceiver();
    // A guard that lets the URL through (as a name resolved to a public address would be) and
    // refuses the address the connection reached.
    const checked: string[] = [];
    const guard = {
      literalRefusal: () => null,
      refusal: (host: string, address: string) => {
        checked.push(address);
        return `${host} connected to ${address}, refused`;
      },
    } as unknown as ReceiverGuard;
    try {
      const sender = new WebhookSender({ timeoutMs: 2000, guard });
      const result = await sender.send(
        {
          url: receiver.url,
          secret: `whsec_${Buffer.from('k'.repeat(24)).toString('base64')}`,
          eventId: 'evt_1',
          payload: '{}',
          timestamp: Date.now(),
        },
        new AbortController().signal,
      );
      expect(result).toMatchObject({
        delivered: false,
        statusCode: null,
        responseBody: null,
        error: '127.0.0.1 connected to 127.0.0.1, refused',
      });
      expect(checked).toEqual(['127.0.0.1']);
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
