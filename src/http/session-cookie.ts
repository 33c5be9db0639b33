import type { FastifyReply, FastifyRequest } from 'fastify';

/** The console's session cookie. */
export const SESSION_COOKIE = 'switchboard_session';

/** The value of the request's cookie `name`, if it carries one. */
export function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/** The session token of the request's cookie, if it carries one. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  return cookieValue(request, SESSION_COOKIE);
}

/**
 * Sets the cookie (a token) or clears it (null). HttpOnly: no script reads it; SameSite=Strict:
 * no other site's page sends it; Secure when the server is reached over https. No Max-Age: the
 * session's expiry slides on the server, and the cookie lasts as long as the browser's session.
 */
export function setSessionCookie(reply: FastifyReply, token: string | null, secure: boolean): void {
  const attributes = ['HttpOnly', 'SameSite=Strict', 'Path=/', ...(token === null ? ['Max-Age=0'] : []), ...(secure ? ['Secure'] : [])];
  reply.header('Set-Cookie', [`${SESSION_COOKIE}=${token ?? ''}`, ...attributes].join('; '));
}
