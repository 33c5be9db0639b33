import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { TestServer } from './server.js';

/** Debian's Chromium (.ci/run installs the `chromium` package when it is missing). */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const BUILT_CONSOLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/console/index.html');

/** Runs first in every page: a refused script, style, image or request is reported as a console error. */
const REPORT_CSP_VIOLATIONS = `document.addEventListener('securitypolicyviolation', (event) =>
  console.error('CSP violation: ' + event.effectiveDirective + ' ' + event.blockedURI + ' (' + event.sourceFile + ':' + event.lineNumber + ')'))`;

/**
 * The console asks for the cookie's session on every load (an HttpOnly cookie is invisible to
 * its scripts): without one the answer is 401, which Chromium reports as a failed load.
 */
function isSessionProbe(message: ConsoleMessage): boolean {
  return /status of 401/.test(message.text()) && new URL(message.location().url, 'http://x').pathname === '/api/v1/auth/sessions/current';
}

export interface ConsoleBrowser {
  /** A fresh tab in a fresh context (its own sessionStorage), at `width`×`height`, with the system's colour scheme. */
  open(options?: { width?: number; height?: number; colorScheme?: 'light' | 'dark' }): Promise<Page>;
  /**
   * Browser console errors this test expects (a failed request the page shows as an error):
   * any other console error or uncaught exception fails the test.
   */
  expectConsoleErrors(pattern: RegExp): void;
}

/**
 * One Chromium for the enclosing describe block, launched in beforeAll and closed in afterAll.
 * After each test its contexts are closed, and any console error, uncaught exception or
 * Content-Security-Policy violation on its pages fails it.
 */
export function useBrowser(): ConsoleBrowser {
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  let errors: string[] = [];
  let expected: RegExp[] = [];

  beforeAll(async () => {
    if (!existsSync(BUILT_CONSOLE)) throw new Error(`${BUILT_CONSOLE} is missing: run \`npm run build\` before the browser tests`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((context) => context.close()));
    const unexpected = errors.filter((error) => !expected.some((pattern) => pattern.test(error)));
    errors = [];
    expected = [];
    expect(unexpected, 'browser console errors').toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
  });

  return {
    async open({ width = 1280, height = 800, colorScheme = 'light' } = {}) {
      if (!browser) throw new Error('the browser is not launched yet (use it inside a test)');
      const context = await browser.newContext({ viewport: { width, height }, colorScheme });
      contexts.push(context);
      // Every Content-Security-Policy violation becomes a console error, so that it fails the test.
      await context.addInitScript(REPORT_CSP_VIOLATIONS);
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error' && !isSessionProbe(message)) errors.push(message.text());
      });
      page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`));
      return page;
    },
    expectConsoleErrors(pattern) {
      expected.push(pattern);
    },
  };
}

/** How long a browser test waits for the page (Playwright's auto-waiting locators; never sleeps). */
export const WAIT_MS = 15_000;

/** A person's sign-in: the username, and the password their admin set. */
export interface Person {
  username: string;
  password: string;
}

/** A person the test created: their sign-in and user id. */
export type CreatedPerson = Person & { id: string };

/** The admin user each test server gets on the first sign-in without a key. */
const consoleAdmins = new WeakMap<TestServer, Promise<CreatedPerson>>();

/** Creates a user (through the API, as the admin key) with a password; returns how it signs in. */
export async function createPerson(server: TestServer, username: string, role: string): Promise<CreatedPerson> {
  const password = `pw-${username}-${randomBytes(8).toString('hex')}`;
  const created = await server.api.post('/api/v1/auth/users', { username, role, password });
  expect(created.status, created.text).toBe(201);
  return { id: created.body.data.id, username, password };
}

/** The admin user `signIn` signs in as by default (created on first use). */
export function consoleAdmin(server: TestServer): Promise<CreatedPerson> {
  if (!consoleAdmins.has(server)) consoleAdmins.set(server, createPerson(server, 'console-admin', 'admin'));
  return consoleAdmins.get(server)!;
}

/**
 * Opens `path` of the console (or a whole URL) and signs in: with `as`, a person's username and password (by
 * default an admin user made once per server); with a string, that API key exchanged for a session.
 */
export async function signIn(page: Page, server: TestServer, path = '/console', as?: Person | string): Promise<void> {
  // A whole URL reaches the server another way (through a proxy).
  await page.goto(path.startsWith('http') ? path : server.url + path);
  if (typeof as === 'string') {
    await page.getByRole('button', { name: 'Use an API key' }).click();
    await page.getByLabel('API key').fill(as);
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
    return;
  }
  const person = as ?? (await consoleAdmin(server));
  await page.getByLabel('Username').fill(person.username);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

const AXE_SOURCE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/axe-core/axe.min.js');

/** An axe-core violation, as a line that says what and where. */
export interface AxeFinding {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules) on the page as it is and answers its serious and
 * critical violations. The engine is evaluated through the DevTools protocol, which the
 * console's Content-Security-Policy (scripts of its own origin only) does not govern.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeFinding[]> {
  await page.evaluate(await readFile(AXE_SOURCE, 'utf8'));
  return page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(
            context: unknown,
            options: unknown,
          ): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => ({
        id: violation.id,
        impact: violation.impact,
        help: violation.help,
        targets: violation.nodes.map((node) => node.target.join(' ')),
      }));
  });
}
