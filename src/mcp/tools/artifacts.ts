import { Type } from '@sinclair/typebox';
import { Artifact, ArtifactParams, SnippetBody } from '../../artifacts/schemas.js';
import { artifactUri, isTextual, readArtifact } from '../artifact-content.js';
import { CREATE, define, READ, toolInput, type GroupTool, type ToolServices } from './define.js';

/** Text up to this size comes inline in read_artifact's result; larger or binary content is a resource link. */
export const INLINE_TEXT_BYTES = 64 * 1024;

const ReadArtifactOutput = Type.Composite([
  Artifact,
  Type.Object({
    text: Type.Optional(
      Type.String({ description: `The content, when it is text (text/*, JSON, XML) of at most ${INLINE_TEXT_BYTES} bytes` }),
    ),
    resource_uri: Type.String({
      description: 'The artifact as an MCP resource: resources/read returns its content (text, or base64 for binary)',
    }),
  }),
]);

/** Artifacts: store a snippet, read one back. Read access is the artifacts service's (owner, shares, groups; admins all). */
export function artifactTools({ artifacts }: ToolServices): GroupTool[] {
  return [
    define({
      name: 'create_snippet',
      permission: 'artifacts:write',
      title: 'Store a snippet',
      description:
        'Store a JSON value (a string of text, an object…) as a new artifact owned by the caller (application/json); returns its metadata, whose id read_artifact takes.',
      input: toolInput(SnippetBody),
      output: Artifact,
      annotations: CREATE,
      run: (body, principal) => artifacts.createSnippet(principal, body),
    }),
    define({
      name: 'read_artifact',
      permission: 'artifacts:read',
      title: 'Read an artifact',
      description:
        'Read an artifact the caller may see (its own, shared with it or its groups): its metadata, its content as text when it is small text or JSON, and always a resource link (switchboard://artifacts/{id}) to read it as a resource, binary content included.',
      input: toolInput(ArtifactParams, { artifact_id: 'Artifact id (art_…)' }),
      output: ReadArtifactOutput,
      annotations: READ,
      run: async ({ artifact_id }, principal) => {
        const artifact = await artifacts.get(principal, artifact_id);
        const resource_uri = artifactUri(artifact.id);
        if (!isTextual(artifact.content_type) || artifact.size_bytes > INLINE_TEXT_BYTES) return { ...artifact, resource_uri };
        const content = await readArtifact(artifacts, principal, artifact.id, INLINE_TEXT_BYTES, artifact.version);
        return { ...artifact, text: content.bytes.toString('utf8'), resource_uri };
      },
      links: (output) => [
        { type: 'resource_link', uri: output.resource_uri, name: output.name, mimeType: output.content_type, size: output.size_bytes },
      ],
    }),
  ];
}
