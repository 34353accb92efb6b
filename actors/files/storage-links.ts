import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  AZURE_STORAGE_VERSION,
  STORAGE_LINK_LIFETIME_MS,
  STORAGE_LINK_PREFIX,
} from '../../protocol/files/storage-links.ts';
import type { Queryable } from '../../storage/driver.ts';
import { ensureServiceSecret } from '../../storage/kernel/service-secrets.ts';

/**
 * Storage links: the service's own HMAC-signed URLs, shaped like an Azure service SAS so that
 * Azure Blob clients use them as they are (the "Storage links" section of /protocol; docs/architecture.md).
 *
 * The SAS query carries Azure's names: `sv` (version), `sr` (`c` the workspace, `b` one file),
 * `sp` (`r`, or `rcw`), `st`/`se` (start, expiry; ISO 8601 to the second), `saoid` (the agent
 * the link acts for: Azure's "signed authorized object id"), `si` (the API token that made it,
 * by id: Azure's "signed identifier" of a stored access policy, whose removal ends the SAS; empty
 * for a link made with no token, by mail) and `sig`. A link lives no longer than its token nor
 * its agent's standing: the door checks both on every request (server/storage-link/door.ts). The signature is
 * HMAC-SHA256, base64url, over those fields, the workspace id and (for `sr=b`) the file path,
 * one per line, so a link works only on the workspace, the file and for the agent it was made
 * for. The key is a service secret in the database: every process on one database verifies
 * the links of every other.
 */
type LinkResource = 'c' | 'b';

export interface LinkGrant {
  workspaceId: string;
  agentId: string;
  /** The API token that made the link; null: none (the email door acts by address). */
  tokenId: string | null;
  resource: LinkResource;
  /** The file of a `b` link. */
  path?: string;
  permissions: 'r' | 'rcw';
  startsAt: Date;
  expiresAt: Date;
}

/** Why a link was refused, in Azure's words: the door answers it as Azure's XML error. */
export class LinkRefused extends Error {
  constructor(
    readonly status: number,
    readonly azureCode: string,
    message: string,
    /** Azure's `AuthenticationErrorDetail`, for AuthenticationFailed. */
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** What a verified link allows. */
export interface VerifiedLink {
  agentId: string;
  /** The API token that made the link, which must still work; null: made with none. */
  tokenId: string | null;
  resource: LinkResource;
  path: string | undefined;
  canRead: boolean;
  canWrite: boolean;
}

const SECRET_NAME = 'storage_links';
// Processes' clocks may differ a little: a link made by one is good at once on another.
const START_SKEW_MS = 60_000;

export class StorageLinks {
  private constructor(private readonly key: Uint8Array) {}

  /** The signer, with the key every process on this database shares (made at first start). */
  static async start(db: Queryable): Promise<StorageLinks> {
    return new StorageLinks(await ensureServiceSecret(db, SECRET_NAME, randomBytes(32)));
  }

  /**
   * A grant for `access` that starts now and lasts the link lifetime (to the second), or until
   * `tokenExpiresAtMs`, when the token that makes it stops sooner.
   */
  static grant(
    access: 'read' | 'readwrite',
    workspaceId: string,
    maker: { agentId: string; tokenId: string | null; tokenExpiresAtMs: number | null },
    path: string | undefined,
    now: number,
  ): LinkGrant {
    const start = Math.floor(now / 1000) * 1000;
    const end = Math.min(start + STORAGE_LINK_LIFETIME_MS, maker.tokenExpiresAtMs ?? Infinity);
    return {
      workspaceId,
      agentId: maker.agentId,
      tokenId: maker.tokenId,
      resource: path === undefined ? 'c' : 'b',
      ...(path === undefined ? {} : { path }),
      permissions: access === 'read' ? 'r' : 'rcw',
      startsAt: new Date(start),
      // To the second, as SAS times are written: never past the token's expiry.
      expiresAt: new Date(Math.floor(end / 1000) * 1000),
    };
  }

  /** The SAS query of a grant (no leading `?`), its values percent-encoded. */
  sasToken(grant: LinkGrant): string {
    const fields = {
      sv: AZURE_STORAGE_VERSION,
      sr: grant.resource,
      sp: grant.permissions,
      st: isoSeconds(grant.startsAt),
      se: isoSeconds(grant.expiresAt),
      saoid: grant.agentId,
      si: grant.tokenId ?? '',
    };
    const sig = this.sign(fields, grant.workspaceId, grant.path ?? '');
    return Object.entries({ ...fields, sig })
      .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
      .join('&');
  }

  /**
   * Checks the SAS fields of a request's query against the workspace and file it names.
   * Throws LinkRefused (403 AuthenticationFailed) when the link is not whole, not ours, not
   * for this workspace or file, not yet valid or expired.
   */
  verify(
    query: URLSearchParams,
    workspaceId: string,
    path: string | undefined,
    now: number,
  ): VerifiedLink {
    const field = (name: string) => query.get(name) ?? '';
    const fields = {
      sv: field('sv'),
      sr: field('sr'),
      sp: field('sp'),
      st: field('st'),
      se: field('se'),
      saoid: field('saoid'),
      si: field('si'),
    };
    const sig = field('sig');
    if (sig === '' || fields.se === '' || fields.saoid === '') {
      throw authenticationFailed('The link lacks its signature, expiry or agent (sig, se, saoid).');
    }
    if (fields.sr !== 'c' && fields.sr !== 'b') {
      throw authenticationFailed('The signed resource (sr) must be c or b.');
    }
    // A blob link signs its path: on another path (or the container) the signature differs.
    const signedPath = fields.sr === 'b' ? (path ?? '') : '';
    const expected = Buffer.from(this.sign(fields, workspaceId, signedPath));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw authenticationFailed(
        'Signature did not match: the link was changed, or is for another workspace or file.',
      );
    }
    const startsAt = fields.st === '' ? 0 : Date.parse(fields.st);
    const expiresAt = Date.parse(fields.se);
    if (now + START_SKEW_MS < startsAt) {
      throw authenticationFailed('Signed start time (st) is in the future.');
    }
    if (!(now < expiresAt)) {
      throw authenticationFailed(
        `Signed expiry time [${fields.se}] must be after the current time: the link expired. Ask for a new one (get_storage_link).`,
      );
    }
    return {
      agentId: fields.saoid,
      tokenId: fields.si === '' ? null : fields.si,
      resource: fields.sr as LinkResource,
      path: fields.sr === 'b' ? path : undefined,
      canRead: fields.sp.includes('r'),
      canWrite: fields.sp.includes('w') || fields.sp.includes('c'),
    };
  }

  /** The container URL of a workspace under `baseUrl`. */
  static containerUrl(baseUrl: string, workspaceId: string): string {
    return `${baseUrl}${STORAGE_LINK_PREFIX}/${workspaceId}`;
  }

  /** A file's URL: each path segment percent-encoded as Azure clients encode blob names. */
  static fileUrl(baseUrl: string, workspaceId: string, path: string): string {
    const encoded = path.split('/').map(encodeURIComponent).join('/');
    return `${StorageLinks.containerUrl(baseUrl, workspaceId)}/${encoded}`;
  }

  private sign(fields: Record<string, string>, workspaceId: string, path: string): string {
    const text = [
      fields.sv,
      fields.sr,
      fields.sp,
      fields.st,
      fields.se,
      fields.saoid,
      fields.si,
      workspaceId,
      path,
    ].join('\n');
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }
}

function authenticationFailed(detail: string): LinkRefused {
  return new LinkRefused(
    403,
    'AuthenticationFailed',
    'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.',
    detail,
  );
}

/** Azure writes SAS times to the second: `2026-01-02T03:04:05Z`. */
function isoSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
