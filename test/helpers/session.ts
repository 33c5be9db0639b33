import { expect } from 'vitest';
import { Api, type ApiResponse, type RequestOptions } from './api.js';

/** A signed-in browser, as far as the server can tell: the session cookie, and the CSRF token it got. */
export class Session {
  constructor(
    readonly baseUrl: string,
    readonly cookie: string,
    readonly csrfToken: string,
    /** The sign-in's answer. */
    readonly signedIn: ApiResponse,
  ) {}

  /** Sends the cookie (no Authorization header); `csrf: false` leaves out X-CSRF-Token. */
  request<T = any>(method: string, path: string, options: RequestOptions & { csrf?: boolean } = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { cookie: this.cookie, ...options.headers };
    if (options.csrf !== false) headers['x-csrf-token'] = this.csrfToken;
    return new Api(this.baseUrl, null).request<T>(method, path, { ...options, headers });
  }
}

/** POST /api/v1/auth/sessions; the session when it answered 201 (asserted). */
export async function signIn(baseUrl: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Session> {
  const res = await signInAttempt(baseUrl, body, headers);
  expect(res.status, res.text).toBe(201);
  const setCookie = res.headers.get('set-cookie')!;
  return new Session(baseUrl, setCookie.split(';')[0]!, res.body.data.csrf_token, res);
}

export function signInAttempt(baseUrl: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return new Api(baseUrl, null).post('/api/v1/auth/sessions', body, { headers });
}
