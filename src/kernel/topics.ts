export { topicMatches } from '#client/topics.js';

/**
 * NATS-style subjects: dot-separated tokens; in a subscription `*` matches exactly one token
 * and a final `>` matches one or more tokens. Published topics are always literal.
 */
const TOKEN = /^[A-Za-z0-9_\-:@]+$/;

export function topicProblem(topic: string, allowWildcards: boolean): string | null {
  if (topic.length === 0 || topic.length > 255) return 'must be 1 to 255 characters';
  const tokens = topic.split('.');
  for (const [i, token] of tokens.entries()) {
    if (token === '*' || token === '>') {
      if (!allowWildcards) return 'must not contain wildcards when publishing';
      if (token === '>' && i !== tokens.length - 1) return "'>' may only be the last token";
      continue;
    }
    if (!TOKEN.test(token)) return `token '${token}' must be letters, digits, '_', '-', ':' or '@' (tokens are separated by single dots)`;
  }
  return null;
}

export function hasWildcard(pattern: string): boolean {
  return pattern.split('.').some((t) => t === '*' || t === '>');
}
