import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page, PageQuery } from '../http/schemas.js';
import { setSessionCookie } from '../http/session-cookie.js';
import { whoAmI } from './routes.js';
import { CreateUserBody, Session, SignInBody, UpdateUserBody, User, UserParams } from './schemas.js';
import type { SessionService } from './sessions.js';
import type { UsersService } from './users.js';

const tags = ['auth'];

/** People: `/auth/users` (users:admin) and the console's sessions `/auth/sessions`. */
export function userRoutes(users: UsersService, sessions: SessionService, options: { secureCookie: boolean }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/auth/users',
      {
        config: { permission: 'users:admin', conflict: 'A user has this username already' },
        schema: { tags, summary: 'Create a user', body: CreateUserBody, response: { 201: DataEnvelope(User) } },
      },
      async (request, reply) => created(reply, await users.create(request.body, request.principal)),
    );

    app.get(
      '/auth/users',
      {
        config: { permission: 'users:admin' },
        schema: { tags, summary: 'List users', querystring: PageQuery, response: { 200: ListEnvelope(User) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await users.list(window), window);
      },
    );

    app.get(
      '/auth/users/:user_id',
      {
        config: { permission: 'users:admin' },
        schema: { tags, summary: 'Get a user', params: UserParams, response: { 200: DataEnvelope(User) } },
      },
      async (request, reply) => ok(reply, await users.get(request.params.user_id)),
    );

    app.patch(
      '/auth/users/:user_id',
      {
        config: { permission: 'users:admin' },
        schema: {
          tags,
          summary: "Change a user's role, display name or password, or disable it (its sessions and keys stop at once)",
          params: UserParams,
          body: UpdateUserBody,
          response: { 200: DataEnvelope(User) },
        },
      },
      async (request, reply) => ok(reply, await users.update(request.params.user_id, request.body, request.principal)),
    );

    app.delete(
      '/auth/users/:user_id',
      {
        config: { permission: 'users:admin' },
        schema: { tags, summary: 'Delete a user, revoke its keys and end its sessions', params: UserParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await users.delete(request.params.user_id);
        return deleted(reply, request.params.user_id);
      },
    );

    app.post(
      '/auth/sessions',
      {
        config: { public: true },
        schema: {
          tags,
          summary: 'Sign in (username and password, or an API key): sets the session cookie',
          description:
            'Answers with the principal, the expiry and the CSRF token, and sets `switchboard_session` (HttpOnly, SameSite=Strict). Requests with the cookie that change state must send the CSRF token as `X-CSRF-Token`. After 5 failures for one username from one address within 15 minutes: 429 with Retry-After.',
          body: SignInBody,
          response: { 201: DataEnvelope(Session) },
        },
      },
      async (request, reply) => {
        const signedIn = await sessions.signIn(request.body ?? {}, request.ip);
        setSessionCookie(reply, signedIn.token, options.secureCookie);
        const principal = whoAmI(signedIn.principal);
        return created(reply, { principal, expires_at: principal.session!.expires_at, csrf_token: signedIn.csrfToken });
      },
    );

    app.get(
      '/auth/sessions/current',
      {
        config: { permission: 'authenticated' },
        schema: {
          tags,
          summary: "The request's session (cookie) and its CSRF token; 404 without one",
          response: { 200: DataEnvelope(Session) },
        },
      },
      async (request, reply) => {
        const session = sessions.current(request.principal, request.sessionToken);
        const principal = whoAmI(request.principal);
        return ok(reply, { principal, expires_at: principal.session!.expires_at, csrf_token: session.csrfToken });
      },
    );

    app.delete(
      '/auth/sessions/current',
      {
        config: { permission: 'authenticated' },
        schema: { tags, summary: "Sign out: end the request's session and clear its cookie; 404 without one", response: { 200: Deleted } },
      },
      async (request, reply) => {
        const ended = await sessions.signOut(request.principal);
        setSessionCookie(reply, null, options.secureCookie);
        return deleted(reply, ended.id);
      },
    );
  };
}
