/**
 * The SDK's own note on the operation table (kernel/operations.ts): the operations that answer
 * with bytes, not an envelope. The client resolves them to their `Response` whatever its
 * Content-Type (the download of a JSON artifact is application/json too, and read as an
 * envelope it was `undefined`). They are the ones schemas.ts gives no `data`;
 * test/client/openapi.test.ts checks that the two agree.
 */
export const BYTE_ANSWERS: ReadonlySet<string> = new Set(['artifacts.download', 'artifacts.downloadSigned', 'events.openStream']);
