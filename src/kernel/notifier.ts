import { EventEmitter } from 'node:events';
import type { Tx } from './tx.js';

/**
 * Wake-ups between parts of the platform (a message arrived, a run advanced, an event was
 * published). A notification is only ever a latency hint: every consumer must also work from
 * what is in the database, so a lost notification costs latency, never correctness.
 * Publish after the transaction that made the change has committed (`notify`), or inside it
 * (`notifyIn`): PostgreSQL then delivers the notification at commit (and drops it on rollback).
 */
export interface Notifier {
  /** Other processes hear this notifier (PostgreSQL's LISTEN/NOTIFY); else only this process does. */
  readonly spansNodes: boolean;
  /**
   * Changes whenever notifications may have been missed (each new LISTEN connection), so a
   * consumer that caches what notifications keep fresh drops what it cached under another
   * epoch; null while they cannot arrive (the connection is down): cache nothing then.
   */
  readonly epoch: number | null;
  notify(channel: string, payload?: string): Promise<void>;
  /** Notifies as part of `tx`: delivered when it commits, where the transport can wait for that. */
  notifyIn(tx: Tx, channel: string, payload?: string): Promise<void>;
  listen(channel: string, handler: (payload: string) => void): () => void;
  /**
   * Calls `handler` whenever notifications may have been lost and are flowing again (a new
   * LISTEN connection after one dropped, a poll that succeeds after failures): every consumer
   * that waits for notices looks at the database once then, so nothing waits for a notice that
   * was sent while the connection was down. Never called in one process (nothing is lost).
   */
  onResume(handler: () => void): () => void;
  /**
   * How notices travel now (GET /readyz): within this process, over a LISTEN connection that is
   * up or down (reconnecting), or by polling (SWITCHBOARD_PG_LISTEN=off).
   */
  readonly transport: 'in_process' | 'listening' | 'reconnecting' | 'polling';
  close(): Promise<void>;
}

/** Embedded mode: one process, so an EventEmitter is the whole transport. */
export class InProcessNotifier implements Notifier {
  readonly spansNodes: boolean = false;
  readonly transport = 'in_process';
  readonly epoch: number | null = 0;
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  async notify(channel: string, payload = ''): Promise<void> {
    this.emitter.emit(channel, payload);
  }

  // With one SQLite connection, a listener woken inside a transaction cannot read until that
  // transaction ends (Kysely queues its query), so emitting at once is safe.
  async notifyIn(_tx: Tx, channel: string, payload = ''): Promise<void> {
    this.emitter.emit(channel, payload);
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    this.emitter.on(channel, handler);
    return () => this.emitter.off(channel, handler);
  }

  onResume(_handler: () => void): () => void {
    return () => undefined;
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
