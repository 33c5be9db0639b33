import type { Result } from '../../src/client/browser.js';

/** A permission the server grants (`runs:read`, `audit:read`…): the console offers only what the principal's hold. */
export type Permission = Result<'auth.whoami'>['permissions'][number];
