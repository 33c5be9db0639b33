import Ajv from 'ajv';

/**
 * The part of Slack's Block Kit a notification uses, as JSON Schema with Slack's own limits
 * (https://api.slack.com/reference/block-kit/blocks, …/composition-objects, …/block-elements#button):
 * what hooks.slack.com accepts from an incoming webhook, and nothing looser.
 */
const plainText = (maxLength: number) => ({
  type: 'object',
  required: ['type', 'text'],
  additionalProperties: false,
  properties: { type: { const: 'plain_text' }, text: { type: 'string', minLength: 1, maxLength }, emoji: { type: 'boolean' } },
});
const mrkdwn = (maxLength: number) => ({
  type: 'object',
  required: ['type', 'text'],
  additionalProperties: false,
  properties: { type: { const: 'mrkdwn' }, text: { type: 'string', minLength: 1, maxLength }, verbatim: { type: 'boolean' } },
});
const button = {
  type: 'object',
  required: ['type', 'text'],
  additionalProperties: false,
  properties: {
    type: { const: 'button' },
    text: plainText(75),
    action_id: { type: 'string', maxLength: 255 },
    url: { type: 'string', maxLength: 3000, pattern: '^https?://' },
    value: { type: 'string', maxLength: 2000 },
    style: { enum: ['primary', 'danger'] },
  },
};
const block = {
  oneOf: [
    {
      type: 'object',
      required: ['type', 'text'],
      additionalProperties: false,
      properties: { type: { const: 'header' }, text: plainText(150), block_id: { type: 'string' } },
    },
    {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      anyOf: [{ required: ['text'] }, { required: ['fields'] }],
      properties: {
        type: { const: 'section' },
        text: { oneOf: [mrkdwn(3000), plainText(3000)] },
        fields: { type: 'array', minItems: 1, maxItems: 10, items: { oneOf: [mrkdwn(2000), plainText(2000)] } },
        block_id: { type: 'string' },
      },
    },
    {
      type: 'object',
      required: ['type', 'elements'],
      additionalProperties: false,
      properties: {
        type: { const: 'context' },
        elements: { type: 'array', minItems: 1, maxItems: 10, items: { oneOf: [mrkdwn(3000), plainText(3000)] } },
        block_id: { type: 'string' },
      },
    },
    {
      type: 'object',
      required: ['type', 'elements'],
      additionalProperties: false,
      properties: {
        type: { const: 'actions' },
        elements: { type: 'array', minItems: 1, maxItems: 25, items: button },
        block_id: { type: 'string' },
      },
    },
  ],
};
const message = {
  type: 'object',
  required: ['blocks'],
  additionalProperties: false,
  properties: { text: { type: 'string', maxLength: 40_000 }, blocks: { type: 'array', minItems: 1, maxItems: 50, items: block } },
};

export const validSlackMessage = new Ajv.default({ allErrors: true, strict: false }).compile(message);
