/**
 * `switchboard/client`: the TypeScript client package (clients/typescript, `@switchboard/client`)
 * re-exported by the server package, for Node (with signing and the agent worker).
 */
export * from '#client/index.js';
