import { Type, type Static } from '@sinclair/typebox';
import { AgentId, JsonObject, PageQuery, Timestamp } from '../http/schemas.js';

export const MAX_NAME_LENGTH = 255;
/** RFC 6838's type and subtype names. */
const MEDIA_NAME = '[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*';
/** RFC 9110's token, and its quoted-string (printable ASCII, tab and space; `\\` quotes one). */
const TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~]|\\\\[\\t -~])*"';
/**
 * A media type as a Content-Type header carries it: type/subtype, then `; name=value`
 * parameters. Only printable ASCII: the type is sent back as the download's header, and text
 * a header cannot hold (a control character, a character above U+00FF) failed every download.
 */
const PARAMETERS = `(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED}))*`;
export const CONTENT_TYPE_PATTERN = `^${MEDIA_NAME}/${MEDIA_NAME}${PARAMETERS}$`;
const CONTENT_TYPE = new RegExp(CONTENT_TYPE_PATTERN);
/** Whether `text` is a media type a request may store (CONTENT_TYPE_PATTERN, at most 255 characters). */
export const isContentType = (text: string): boolean => text.length <= 255 && CONTENT_TYPE.test(text);
/**
 * Bounds of a metadata filter (service.ts checkMetadataFilter): its JSON text, its nesting
 * (the top object is level 1), its objects' keys, its arrays' elements, and its keys and
 * elements in all. Each value of a filter is one correlated json_each lookup per artifact on
 * SQLite (one containment step on PostgreSQL), and each level a nested subquery: unbounded,
 * a 300-element array over 1,000 artifacts held SQLite's one connection (and the server) for
 * 7.4 s, 500 elements or 40 levels broke the statement (a 500), and PostgreSQL spent 7 s of
 * database time on it.
 */
export const METADATA_FILTER_BYTES = 4096;
export const METADATA_FILTER_LIMITS = { depth: 5, keys: 20, elements: 20, values: 64 } as const;
/** Signed and upload URLs live from one second to seven days. */
export const MAX_EXPIRES_IN_S = 7 * 24 * 3600;
export const DEFAULT_UPLOAD_EXPIRES_IN_S = 3600;

const Name = Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'Display and download file name' });
const ContentType = Type.String({
  pattern: CONTENT_TYPE_PATTERN,
  maxLength: 255,
  description: 'MIME type: type/subtype, then optional ; name=value parameters, in printable ASCII',
});
const Sha256 = Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'hex SHA-256 of the content' });
const GroupName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'Access group name: its members are granted by an admin (PUT /auth/groups/{group}/members/{agent_id})',
});
const expiresIn = (options: { default?: number } = {}) =>
  Type.Integer({ minimum: 1, maximum: MAX_EXPIRES_IN_S, description: 'Seconds until the URL expires (1 s to 7 days)', ...options });

export const Artifact = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    content_type: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String({ description: 'hex SHA-256 of the current version; also its ETag' }),
    metadata: JsonObject,
    version: Type.Integer({ description: 'The current version' }),
    owner: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Artifact' },
);
export type Artifact = Static<typeof Artifact>;

export const ArtifactVersion = Type.Object(
  {
    version: Type.Integer(),
    content_type: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String(),
    created_at: Timestamp,
    created_by: Type.String(),
  },
  { title: 'ArtifactVersion' },
);
export type ArtifactVersion = Static<typeof ArtifactVersion>;

export const VersionList = Type.Object(
  { versions: Type.Array(ArtifactVersion, { description: 'Newest first' }) },
  { title: 'ArtifactVersions' },
);

export const VersionDeleted = Type.Object(
  {
    id: Type.String(),
    version: Type.Integer(),
    deleted: Type.Literal(true),
    current_version: Type.Integer({ description: 'The version now served by default' }),
  },
  { title: 'ArtifactVersionDeleted' },
);

export const SnippetBody = Type.Object(
  {
    name: Name,
    content: Type.Unknown({ description: 'Any JSON value; stored as application/json' }),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);
export type SnippetBody = Static<typeof SnippetBody>;

export const UploadIntentBody = Type.Object(
  {
    name: Name,
    content_type: ContentType,
    // A bigint column: the upload limit (SWITCHBOARD_MAX_UPLOAD_BYTES) may pass 2 GiB.
    size_bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Exact size of the bytes that will be PUT' }),
    sha256: Type.Optional(Sha256),
    metadata: Type.Optional(JsonObject),
    expires_in: Type.Optional(expiresIn({ default: DEFAULT_UPLOAD_EXPIRES_IN_S })),
  },
  { additionalProperties: false },
);
export type UploadIntentBody = Static<typeof UploadIntentBody>;

export const UploadIntent = Type.Object(
  {
    upload_id: Type.String(),
    url: Type.String({ description: 'PUT the raw bytes here, without an Authorization header' }),
    expires_at: Timestamp,
  },
  { title: 'UploadIntent' },
);

export const UploadReceived = Type.Object(
  {
    upload_id: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String(),
  },
  { title: 'UploadReceived' },
);

export const SignedUrlBody = Type.Object(
  {
    expires_in: expiresIn(),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })),
  },
  { additionalProperties: false },
);
export type SignedUrlBody = Static<typeof SignedUrlBody>;

export const SignedUrl = Type.Object({ url: Type.String(), expires_at: Timestamp, version: Type.Integer() }, { title: 'SignedUrl' });

export const ShareBody = Type.Object(
  {
    with_agents: Type.Optional(Type.Array(AgentId, { maxItems: 500 })),
    with_groups: Type.Optional(Type.Array(GroupName, { maxItems: 500 })),
  },
  { additionalProperties: false },
);
export const UnshareBody = Type.Object(
  {
    agents: Type.Optional(Type.Array(AgentId, { maxItems: 500 })),
    groups: Type.Optional(Type.Array(GroupName, { maxItems: 500 })),
  },
  { additionalProperties: false },
);

export const AccessList = Type.Object(
  {
    owner: Type.String(),
    agents: Type.Array(Type.String()),
    groups: Type.Array(Type.String()),
  },
  { title: 'ArtifactAccess' },
);
export type AccessList = Static<typeof AccessList>;

export const ListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    content_type: Type.Optional(
      Type.String({
        pattern: `^${MEDIA_NAME}/(?:\\*|${MEDIA_NAME}${PARAMETERS})$`,
        maxLength: 255,
        description: "Exact MIME type, or 'type/*'",
      }),
    ),
    metadata: Type.Optional(
      Type.String({
        maxLength: METADATA_FILTER_BYTES,
        description:
          'A JSON object that every listed artifact metadata contains (PostgreSQL jsonb @>): at most ' +
          `${METADATA_FILTER_BYTES} characters, ${METADATA_FILTER_LIMITS.depth} levels of nesting, ${METADATA_FILTER_LIMITS.keys} keys per object, ` +
          `${METADATA_FILTER_LIMITS.elements} elements per array and ${METADATA_FILTER_LIMITS.values} keys and elements in all`,
      }),
    ),
  }),
]);

export const SharedQuery = Type.Composite([PageQuery, Type.Object({ agent_id: Type.Optional(AgentId) })]);

export const ArtifactParams = Type.Object({ artifact_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const VersionParams = Type.Object({
  artifact_id: Type.String({ minLength: 1, maxLength: 100 }),
  version: Type.Integer({ minimum: 1 }),
});
export const DownloadQuery = Type.Object({ version: Type.Optional(Type.Integer({ minimum: 1 })) });
export const UploadParams = Type.Object({ upload_id: Type.String({ minLength: 1, maxLength: 100 }) });
/** The proof a signed or upload URL carries instead of credentials. */
export const SignatureQuery = Type.Object({
  // Never stored, only compared with the clock: past 2038 too.
  expires: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Unix seconds' }),
  signature: Type.String({ minLength: 1, maxLength: 200 }),
});
