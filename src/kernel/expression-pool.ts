import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Evaluates JSONata expressions (plans' transforms and conditions, triggers' filters). */
export interface Expressions {
  /** The expression's value over `input` (undefined: nothing matched); rejects with ExpressionError. */
  evaluate(expression: string, input: unknown): Promise<unknown>;
}

export interface ExpressionLimits {
  /** Processes that evaluate at once; more expressions wait their turn. */
  readonly workers: number;
  /** One evaluation's time, from when a process takes it; past it the process is killed. */
  readonly timeoutMs: number;
  /** The largest result, as JSON text. */
  readonly maxResultBytes: number;
  /** The V8 old-generation heap of each process (--max-old-space-size). */
  readonly heapMb: number;
  /** Expressions that may wait for a process; one more fails at once. Default QUEUED_PER_WORKER per process. */
  readonly maxQueued?: number;
}

/**
 * Expressions that may wait per process. Each waiting one holds its input, and each may take
 * its whole time budget: unbounded, a burst of trigger fires or plan steps grew memory and
 * waited behind one another for minutes. 256 per process at the default 1 s budget is at most
 * about two minutes of waiting, while an ordinary expression (a path, a comparison: under a
 * millisecond) clears a full queue in well under a second.
 */
export const QUEUED_PER_WORKER = 256;

/** An expression failed on its input (`failed`) or went over its time, memory or size budget (`budget`). */
export class ExpressionError extends Error {
  constructor(
    readonly kind: 'failed' | 'budget',
    message: string,
  ) {
    super(message);
  }
}

interface Task {
  expression: string;
  input: unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface Evaluator {
  child: ChildProcess;
  /** Its module is loaded: the time budget of a task starts once it can evaluate. */
  ready: boolean;
  task: Task | null;
  timer: NodeJS.Timeout | null;
}

type Answer = { ready: true } | { ok: true; json: string | undefined } | { ok: false; message: string } | { ok: false; tooLarge: number };

const EVALUATOR = fileURLToPath(new URL('./expression-evaluator.js', import.meta.url));
const CLOSED = 'the expression pool is closed';

/**
 * JSONata off the event loop. Any agent may write an expression, and one such as
 * `$count([1..10000000].$string($))` held the event loop for 29 s and grew the heap by 640 MB
 * when evaluated in-process (measured). Here each evaluation runs in a child process with a
 * capped heap; one past its time budget is killed, one out of memory dies, and its task fails
 * with ExpressionError while a fresh process takes the queue. Processes, not worker threads:
 * a worker's heap limit does not hold against one large allocation (JSONata's range builds
 * its array at once), and V8 then ends the whole process (measured: `[1..10000000]` in a
 * worker limited to 16, 64 or 128 MB took the server down). Processes start on first use and
 * stop on close(), so none outlives the app.
 */
export class ExpressionPool implements Expressions {
  private readonly evaluators = new Set<Evaluator>();
  private readonly queue: Task[] = [];
  /** Processes killed and not yet exited (close() waits for them too). */
  private readonly exiting = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly limits: ExpressionLimits) {}

  evaluate(expression: string, input: unknown): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error(CLOSED));
    const maxQueued = this.limits.maxQueued ?? QUEUED_PER_WORKER * this.limits.workers;
    if (this.queue.length >= maxQueued) {
      return Promise.reject(
        new ExpressionError('budget', `too many expressions are waiting to be evaluated (${maxQueued}); try again later`),
      );
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ expression, input, resolve, reject });
      this.dispatch();
    });
  }

  /** Fails what waits, kills every process and resolves once they have exited. */
  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new Error(CLOSED));
    for (const evaluator of [...this.evaluators]) this.end(evaluator, new Error(CLOSED));
    await Promise.all([...this.exiting]);
  }

  /** Hands waiting tasks to idle processes, starting processes up to the limit. */
  private dispatch(): void {
    while (this.queue.length > 0) {
      let idle: Evaluator | undefined;
      for (const evaluator of this.evaluators) if (evaluator.ready && evaluator.task === null) idle = evaluator;
      if (idle === undefined) {
        // Any process still starting takes the next task when it is ready.
        if (this.evaluators.size < this.limits.workers) this.start();
        return;
      }
      this.run(idle, this.queue.shift()!);
    }
  }

  private run(evaluator: Evaluator, task: Task): void {
    evaluator.task = task;
    evaluator.timer = setTimeout(() => {
      this.end(evaluator, new ExpressionError('budget', `the expression exceeded its time budget (${this.limits.timeoutMs} ms)`));
    }, this.limits.timeoutMs);
    evaluator.child.send({ expression: task.expression, input: task.input }, (err) => {
      // The channel closed under it (the process died): its exit says why.
      if (err) this.end(evaluator, new ExpressionError('failed', 'the expression evaluator stopped unexpectedly'));
    });
  }

  /** The process's task is over: it may take the next one. */
  private settle(evaluator: Evaluator): Task | null {
    const task = evaluator.task;
    if (evaluator.timer) clearTimeout(evaluator.timer);
    evaluator.task = null;
    evaluator.timer = null;
    return task;
  }

  private start(): void {
    const child = fork(EVALUATOR, [], {
      // Not the server's own flags (a test's loaders, a debugger port): only the heap cap.
      execArgv: [`--max-old-space-size=${this.limits.heapMb}`],
      env: { PATH: process.env.PATH, SWITCHBOARD_EXPRESSION_MAX_RESULT_BYTES: String(this.limits.maxResultBytes) },
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    const evaluator: Evaluator = { child, ready: false, task: null, timer: null };
    this.evaluators.add(evaluator);
    child.on('message', (answer: Answer) => this.answered(evaluator, answer));
    const exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        resolve();
        // It went away by itself: out of memory (V8 aborts), or a crash.
        this.end(
          evaluator,
          signal === 'SIGABRT' || signal === 'SIGTRAP' || code === 134
            ? new ExpressionError('budget', `the expression exceeded its memory budget (${this.limits.heapMb} MB)`)
            : new ExpressionError('failed', 'the expression evaluator stopped unexpectedly'),
        );
      });
      // Could not start at all (no process left to the user): what waits fails with it.
      child.once('error', (err) => {
        resolve();
        const reason = new ExpressionError('failed', `the expression evaluator could not start: ${err.message}`);
        for (const task of this.queue.splice(0)) task.reject(reason);
        this.end(evaluator, reason);
      });
    });
    this.exiting.add(exited);
    void exited.then(() => this.exiting.delete(exited));
  }

  private answered(evaluator: Evaluator, answer: Answer): void {
    if ('ready' in answer) {
      evaluator.ready = true;
      this.dispatch();
      return;
    }
    const task = this.settle(evaluator);
    if (task !== null) {
      if (answer.ok) {
        try {
          task.resolve(answer.json === undefined ? undefined : JSON.parse(answer.json));
        } catch (err) {
          task.reject(new ExpressionError('failed', (err as Error).message));
        }
      } else if ('tooLarge' in answer) {
        task.reject(
          new ExpressionError(
            'budget',
            `the expression's result exceeded its size budget (${answer.tooLarge} bytes, at most ${this.limits.maxResultBytes})`,
          ),
        );
      } else {
        task.reject(new ExpressionError('failed', answer.message));
      }
    }
    this.dispatch();
  }

  /** Kills a process (its task, if any, fails with `reason`) and lets the queue move on. */
  private end(evaluator: Evaluator, reason: unknown): void {
    if (!this.evaluators.delete(evaluator)) return;
    this.settle(evaluator)?.reject(reason);
    if (evaluator.child.exitCode === null && evaluator.child.signalCode === null) evaluator.child.kill('SIGKILL');
    // A replacement starts when a task needs one.
    if (!this.closed) this.dispatch();
  }
}
