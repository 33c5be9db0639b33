/** `switchboard/client` under the `browser` condition: the client package's browser entry, re-exported. */
export * from '#client/browser.js';
