import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ok } from '../http/reply.js';
import { DataEnvelope } from '../http/schemas.js';
import { cookieValue, setSessionCookie } from '../http/session-cookie.js';
import { AppError, NotFound } from '../kernel/errors.js';
import { CONSOLE_HOME, decodeFlow, encodeFlow, type OidcFlow, type OidcSignIn } from './oidc.js';
import { OidcCallbackQuery, OidcProvider, OidcStartQuery } from './schemas.js';

const tags = ['auth'];
const CALLBACK_PATH = '/api/v1/auth/oidc/callback';
/** The sign-in in progress: HttpOnly, and Lax so that the provider's redirect back (a top-level navigation from its site) carries it. */
const FLOW_COOKIE = 'switchboard_oidc';
const FLOW_TTL_S = 600;

function setFlowCookie(reply: FastifyReply, flow: OidcFlow | null, secure: boolean): void {
  const attributes = [
    'HttpOnly',
    'SameSite=Lax',
    'Path=/api/v1/auth/oidc',
    `Max-Age=${flow === null ? 0 : FLOW_TTL_S}`,
    ...(secure ? ['Secure'] : []),
  ];
  reply.header('Set-Cookie', [`${FLOW_COOKIE}=${flow === null ? '' : encodeFlow(flow)}`, ...attributes].join('; '));
}

/**
 * OIDC sign-in for the console: `/auth/oidc` tells the sign-in page whether it is
 * configured, `/auth/oidc/start` sends the browser to the provider, `/auth/oidc/callback` takes
 * it back, sets the session cookie and returns to the console; a refused sign-in returns to
 * the sign-in page with `sign_in_error`.
 */
export function oidcRoutes(
  signIn: OidcSignIn | null,
  options: { secureCookie: boolean; publicUrl: string | null },
): FastifyPluginAsyncTypebox {
  const configured = (): OidcSignIn => {
    if (signIn === null) throw new NotFound('OIDC sign-in', 'configuration (set SWITCHBOARD_OIDC_ISSUER and SWITCHBOARD_OIDC_CLIENT_ID)');
    return signIn;
  };
  const redirectUri = (request: FastifyRequest) => `${options.publicUrl ?? `${request.protocol}://${request.host}`}${CALLBACK_PATH}`;

  return async (app) => {
    app.get(
      '/auth/oidc',
      {
        config: { public: true },
        schema: {
          tags,
          summary: 'Whether OIDC sign-in is configured, and the name of its provider',
          response: { 200: DataEnvelope(OidcProvider) },
        },
      },
      async (_request, reply) =>
        ok(reply, {
          configured: signIn !== null,
          name: signIn?.providerName ?? null,
          start_url: signIn === null ? null : '/api/v1/auth/oidc/start',
        }),
    );

    app.get(
      '/auth/oidc/start',
      {
        config: { public: true },
        // A browser's navigation, not an API call: left out of the API's document and the SDK.
        schema: {
          tags,
          summary: "Start an OIDC sign-in: redirects to the provider's authorization endpoint (code flow, PKCE, state, nonce)",
          querystring: OidcStartQuery,
          hide: true,
        },
      },
      async (request, reply) => {
        const { url, flow } = await configured().start(redirectUri(request), request.query.return_to);
        setFlowCookie(reply, flow, options.secureCookie);
        return reply.redirect(url);
      },
    );

    app.get(
      '/auth/oidc/callback',
      {
        config: { public: true },
        schema: {
          tags,
          summary: "The provider's redirect back: finishes the sign-in, sets the session cookie and returns to the console",
          querystring: OidcCallbackQuery,
          hide: true,
        },
      },
      async (request, reply) => {
        const provider = configured();
        setFlowCookie(reply, null, options.secureCookie);
        const query = request.url.slice(request.url.indexOf('?') + 1);
        try {
          const flow = decodeFlow(cookieValue(request, FLOW_COOKIE));
          const signedIn = await provider.finish(request.url.includes('?') ? query : '', flow);
          setSessionCookie(reply, signedIn.token, options.secureCookie);
          return reply.redirect(flow.returnTo);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          return reply.redirect(`${CONSOLE_HOME}?${new URLSearchParams({ sign_in_error: err.message })}`);
        }
      },
    );
  };
}
