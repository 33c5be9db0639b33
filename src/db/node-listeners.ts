import { InProcessNotifier } from '../kernel/notifier.js';

/**
 * This node's listeners, for the notifiers that span nodes (LISTEN/NOTIFY, polling): what their
 * transport hears is handed out here, and so is the news that notices flow again after a loss.
 */
export class NodeListeners {
  private readonly local = new InProcessNotifier();
  private readonly resumeHandlers = new Set<() => void>();

  deliver(channel: string, payload: string): void {
    void this.local.notify(channel, payload);
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    return this.local.listen(channel, handler);
  }

  onResume(handler: () => void): () => void {
    this.resumeHandlers.add(handler);
    return () => this.resumeHandlers.delete(handler);
  }

  /** Notices may have been lost and flow again: every consumer looks at the database once. */
  resumed(): void {
    for (const handler of [...this.resumeHandlers]) handler();
  }

  async close(): Promise<void> {
    this.resumeHandlers.clear();
    await this.local.close();
  }
}
