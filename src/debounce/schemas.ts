import { Type } from '@sinclair/typebox';

/** `debounce` of event and webhook triggers and of webhook routines. */
export const DebounceConfig = Type.Object(
  {
    seconds: Type.Integer({ minimum: 1, maximum: 86_400, description: 'The run starts after this long without another event' }),
    key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 500, description: 'A template over {{event.*}}: each value debounces apart' }),
    ),
    max_wait_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, description: "At most this long after a burst's first event" })),
  },
  {
    additionalProperties: false,
    title: 'Debounce',
    description:
      "A burst of matching events (or webhook calls) starts one run, after `seconds` of quiet or `max_wait_s` at most, with the last event's input",
  },
);
