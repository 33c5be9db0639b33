/** Whether a NATS-style pattern (`run.*`, `run.>`) matches a topic or event type: `*` is exactly one token, a final `>` one or more. */
export function topicMatches(pattern: string, topic: string): boolean {
  const p = pattern.split('.');
  const t = topic.split('.');
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === '>') return t.length > i;
    if (i >= t.length) return false;
    if (token !== '*' && token !== t[i]) return false;
  }
  return p.length === t.length;
}
