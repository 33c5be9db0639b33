/*
 * Why an approval link can no longer decide its step, read from the API's answer:
 * pure, unit-tested in test/console/link-refusal.test.ts.
 */

export type LinkRefusal =
  { kind: 'decided'; by: string; at: string } | { kind: 'expired' | 'cancelled' | 'superseded' | 'closed' | 'not_found'; message: string };

interface ApiAnswer {
  status: number;
  message: string;
  details?: unknown;
}

const decision = (details: unknown): { decided_by: string; decided_at: string } | undefined => {
  const d = details as { decided_by?: unknown; decided_at?: unknown } | null | undefined;
  return typeof d?.decided_by === 'string' && typeof d.decided_at === 'string'
    ? { decided_by: d.decided_by, decided_at: d.decided_at }
    : undefined;
};

/**
 * The refusal an error of GET or POST /coordination/approvals/{token} means, or null for any
 * other error (a 400 about the answer's data, a server fault): a token this server did not sign
 * is 404, one that is not a token at all a 400 about the path; a link whose step no longer waits
 * for it is 409, with who decided when once it was decided.
 */
export function linkRefusal({ status, message, details }: ApiAnswer): LinkRefusal | null {
  const aboutPath = Array.isArray(details) && details.some((problem: { in?: unknown }) => problem?.in === 'params');
  if (status === 404 || (status === 400 && aboutPath)) return { kind: 'not_found', message };
  if (status !== 409) return null;
  const decided = decision(details);
  if (decided) return { kind: 'decided', by: decided.decided_by, at: decided.decided_at };
  if (/\bexpired at\b/.test(message)) return { kind: 'expired', message };
  if (/\bwas cancelled\b/.test(message)) return { kind: 'cancelled', message };
  if (/\bearlier wait\b/.test(message)) return { kind: 'superseded', message };
  return { kind: 'closed', message };
}
