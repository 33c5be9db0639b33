// @ts-check
// A process of the expression pool (expression-pool.ts): evaluates one JSONata expression at a
// time and answers with its result as JSON text. Plain JavaScript, so the same file runs from
// src/ under the tests and from dist/ after the build (tsc copies it, and checks it: allowJs).
import { Buffer } from 'node:buffer';
import process from 'node:process';
import jsonata from 'jsonata';

const send = process.send?.bind(process);
if (!send) throw new Error('expression-evaluator.js runs only as a child process with an IPC channel');
const maxResultBytes = Number(process.env.SWITCHBOARD_EXPRESSION_MAX_RESULT_BYTES);

/** Compiled expressions by text: plans and triggers evaluate the same few again and again. */
const compiled = new Map();
const MAX_COMPILED = 1000;

/** @param {string} text */
function compile(text) {
  let expression = compiled.get(text);
  if (expression === undefined) {
    expression = jsonata(text);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value);
    compiled.set(text, expression);
  }
  return expression;
}

/** @param {unknown} err */
const messageOf = (err) => (err !== null && typeof err === 'object' && 'message' in err ? String(err.message) : String(err));

process.on('message', async (/** @type {{ expression: string; input: unknown }} */ task) => {
  try {
    const result = await compile(task.expression).evaluate(task.input);
    // Sequences are arrays with flags; JSON keeps what a step output keeps. undefined: no match.
    const json = result === undefined ? undefined : JSON.stringify(result);
    const bytes = json === undefined ? 0 : Buffer.byteLength(json);
    if (bytes > maxResultBytes) send({ ok: false, tooLarge: bytes });
    else send({ ok: true, json });
  } catch (err) {
    send({ ok: false, message: messageOf(err) });
  }
});
// The parent ends this process (SIGKILL) when it closes or the expression runs out of time; a
// parent that dies closes the channel, and this process goes with it.
process.on('disconnect', () => process.exit(0));
send({ ready: true });
