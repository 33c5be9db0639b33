import { iso } from '../../kernel/clock.js';
import { isJsonObject } from '../../kernel/json.js';
import { changeStep, completeStep, record, setStepDetail, stepDetail } from '../run-state.js';
import { render } from '../templates.js';
import { StepError, type StepKind } from './kind.js';

/** True when every field of `match` equals the same field of `value` (recursively for objects). */
function matches(match: unknown, value: unknown): boolean {
  if (isJsonObject(match)) return isJsonObject(value) && Object.entries(match).every(([k, v]) => matches(v, value[k]));
  return JSON.stringify(match) === JSON.stringify(value);
}

/**
 * A wait step: runs for some seconds, until a time (its timer), or until an event is published
 * on its topic whose payload has the fields of its match; it completes with the time or the event.
 */
export const wait: StepKind = {
  repeatable: true,
  waitsOutside: true,

  checkFields(step, { at, problem }) {
    const modes = [step.seconds, step.until, step.event].filter((v) => v !== undefined).length;
    if (modes !== 1) problem(`${at}.seconds`, 'a wait step has exactly one of seconds, until or event');
    if (step.until !== undefined && !step.until.includes('{{') && Number.isNaN(Date.parse(step.until))) {
      problem(`${at}.until`, 'is an ISO 8601 time or a template');
    }
  },

  async start(_tx, ctx, step, def, scope) {
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt });
    if (def.event !== undefined) {
      const match = def.event.match === undefined ? undefined : (render(def.event.match, scope) as Record<string, unknown>);
      setStepDetail(step, match === undefined ? {} : { match });
      changeStep(step, { wait_topic: def.event.topic, input: JSON.stringify({ topic: def.event.topic, match: match ?? null }) });
      return;
    }
    let until: number;
    if (def.seconds !== undefined) until = ctx.now + def.seconds * 1000;
    else {
      const text = render(def.until, scope);
      until = typeof text === 'string' ? Date.parse(text) : Number.NaN;
      if (Number.isNaN(until)) throw new StepError(`until '${String(text)}' is not an ISO 8601 time`);
    }
    changeStep(step, { wake_at: until, input: JSON.stringify({ until: iso(until) }) });
  },

  async onTimer(_tx, ctx, step) {
    completeStep(ctx, step, { waited_until: iso(step.row.wake_at!) });
  },

  onEvent(ctx, step, event) {
    if (step.row.status !== 'running' || step.row.wait_topic === null) return false;
    const { match } = stepDetail(step);
    if (match !== undefined && !matches(match, event.payload)) return false;
    completeStep(ctx, step, { topic: event.topic, payload: event.payload, published_at: event.published_at, publisher: event.publisher });
    return true;
  },
};
