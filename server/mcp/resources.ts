import type { Resource } from '@modelcontextprotocol/sdk/types.js';
import type { Services } from '../../actors/kernel/services.ts';
import { DOCUMENTS } from '../../protocol/documents.ts';
import { generateOpenApi } from '../../protocol/openapi.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { loadDocuments } from '../documents.ts';

/** The MCP error code of a resource that does not exist (MCP specification, "Resources"). */
export const RESOURCE_NOT_FOUND = -32002;

interface ServedResource {
  resource: Resource;
  text: string;
}

/**
 * The reference documents as MCP resources (resources/list, resources/read): every document
 * GET serves (server/documents.ts) and /openapi.json. A resource's URI is the document's own
 * absolute URL under BASE_URL, so the links inside the documents (`{base_url}/protocol`) name
 * resources as they are, and an agent may read one over MCP or fetch it over HTTP alike. Its
 * text is the text the HTTP route serves, placeholders filled; its `mimeType` the media type
 * of the HTTP answer (`text/markdown`; `text/plain` for /llms.txt; `application/json`).
 * Made once per process, on first use.
 */
export class ResourceTable {
  private byUri: Map<string, ServedResource> | undefined;

  constructor(
    private readonly services: Services,
    private readonly baseUrl: string,
  ) {}

  list(): Resource[] {
    return [...this.table().values()].map((served) => served.resource);
  }

  /** The resource at `uri` with its text, or undefined when there is none. */
  read(uri: string): ServedResource | undefined {
    return this.table().get(uri);
  }

  private table(): Map<string, ServedResource> {
    if (this.byUri) return this.byUri;
    const { config } = this.services;
    const byUri = new Map<string, ServedResource>();
    const served = loadDocuments(this.services);
    for (const document of DOCUMENTS) {
      const body = served.get(document.path);
      // Documents only: the downloads (the pay script) are programs, not resources to read.
      if (!body || typeof body.body !== 'string') continue;
      const uri = `${this.baseUrl}${document.path}`;
      byUri.set(uri, {
        resource: {
          uri,
          name: document.path.slice(1),
          title: document.path,
          description: document.summary
            .replace('{terms_url}', config.termsUrl)
            .replace('{privacy_url}', config.privacyUrl),
          mimeType: mediaType(body.contentType),
          size: Buffer.byteLength(body.body),
        },
        text: body.body,
      });
    }
    // What GET /openapi.json serves (server/app.ts); a test server's test-only operations aside.
    const openApi = JSON.stringify(generateOpenApi(this.baseUrl, OPERATION_LIST));
    const uri = `${this.baseUrl}/openapi.json`;
    byUri.set(uri, {
      resource: {
        uri,
        name: 'openapi.json',
        title: '/openapi.json',
        description: 'The OpenAPI 3.1 description of every HTTP operation.',
        mimeType: 'application/json',
        size: Buffer.byteLength(openApi),
      },
      text: openApi,
    });
    this.byUri = byUri;
    return byUri;
  }
}

/** `text/markdown; charset=utf-8` -> `text/markdown`. */
function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? contentType).trim();
}
