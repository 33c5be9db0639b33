/**
 * `npm run bench -- alerts`: what enabled alert rules cost the work they watch. The coordination
 * bench's fan-out (1,000 runs of split → (a, b, c) → join drained by 8 echo loops) on a server
 * without rules and on one with 1,000 enabled rules of every condition type (none firing: an
 * alert's notifications are not what is measured), evaluated every second (5× the default pace),
 * rounds alternating, on SQLite and PostgreSQL. Target: the rules cost ≤ 5% of steps/s.
 */
import os from 'node:os';
import { fanOut, fanOutCostRow, type FanOutFigure } from './coordination.js';
import { adminPost, fmt, machine, record, startSwitchboard, type SwitchboardProcess } from './lib.js';

const RULES = 1000;
const ROUNDS = 3;
const INTERVAL_MS = 1000;

/** The condition of the i-th rule: the seven types in turn, with thresholds the fan-out never reaches. */
function condition(i: number): Record<string, unknown> {
  const eventTypes = ['run.completed', 'run.step.completed', 'run.*', 'message.dead_lettered', '*'];
  switch (i % 7) {
    case 0:
      return { type: 'event_count', event_type: eventTypes[i % eventTypes.length], window_s: 300, threshold: 1_000_000 };
    case 1:
      return { type: 'inbox_depth', ...(i % 2 ? { agent_id: `agent-${i}` } : {}), threshold: 1_000_000 };
    case 2:
      return { type: 'inbox_age', ...(i % 2 ? { agent_id: `agent-${i}` } : {}), older_than_s: 86_400 };
    case 3:
      return { type: 'dead_letters', threshold: 1_000_000 };
    case 4:
      return { type: 'agent_unhealthy', agent_id: `agent-${i}`, for_s: 60 };
    case 5:
      return { type: 'approval_waiting', older_than_s: 86_400 };
    default:
      return { type: 'routine_failures', threshold: 1_000 };
  }
}

async function addRules(server: SwitchboardProcess): Promise<void> {
  const channel = await adminPost(server, '/api/v1/notifications/channels', {
    type: 'agent',
    name: 'triage',
    config: { agent_id: 'triage' },
  });
  for (let i = 0; i < RULES; i++)
    await adminPost(server, '/api/v1/alerts/rules', { name: `rule ${i}`, condition: condition(i), channels: [channel.data.id] });
}

export default async function alerts(): Promise<void> {
  const load = os.loadavg()[0]!;
  const rows: string[] = [];
  for (const dialect of ['sqlite', 'postgres'] as const) {
    if (dialect === 'postgres' && !process.env.SWITCHBOARD_TEST_DATABASE_URL) continue;
    const figures: Record<'without' | 'with', FanOutFigure[]> = { without: [], with: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of ['without', 'with'] as const) {
        const server = await startSwitchboard({ dialect, env: { SWITCHBOARD_ALERT_INTERVAL_MS: String(INTERVAL_MS) } });
        try {
          if (mode === 'with') await addRules(server);
          const figure = await fanOut(server);
          figures[mode].push(figure);
          console.log(dialect, mode, figure);
        } finally {
          await server.stop();
        }
      }
    }
    rows.push(fanOutCostRow(dialect, figures.without, figures.with));
  }
  const lines = [
    `## Alerts (issue 40): ${fmt(RULES)} enabled rules over the coordination fan-out`,
    '',
    `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- alerts\` (${new Date().toISOString().slice(0, 10)}).`,
    `1-minute load average: ${fmt(load, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end (the machine is shared).`,
    '',
    `The coordination bench's (b) on a fresh server without rules, then on one with ${fmt(RULES)} enabled rules (the seven`,
    `condition types in turn; event_count over the last 300 s of run.completed, run.step.completed, run.*, … and *),`,
    `evaluated every ${fmt(INTERVAL_MS)} ms (SWITCHBOARD_ALERT_INTERVAL_MS; the default is 5,000), ${ROUNDS} rounds alternating.`,
    'Cost: 1 − median steps/s with ÷ without; CPU: median server CPU per step with ÷ without − 1.',
    '',
    '| storage | steps/s without, per round | steps/s with, per round | median without / with (cost) | server CPU ms/step without / with (cost) |',
    '|---|---|---|---:|---:|',
    ...rows,
    '',
    'Target: the rules cost ≤ 5% of steps/s.',
    '',
  ];
  record('alerts', lines.join('\n'));
  console.log(lines.join('\n'));
}
