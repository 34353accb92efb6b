import { parseFilePath } from '../../protocol/files/path.ts';
import { StorageLinks } from './storage-links.ts';
import type { Handler } from '../kernel/handler.ts';
import { assertMayWrite } from '../kernel/token-scope.ts';
import { assertMayChange, readable } from '../workspaces/access.ts';

export const getStorageLink: Handler<'get_storage_link'> = async (
  { services, principal },
  input,
) => {
  // The operation lets `read` tokens through (readScope `handler`): to read only.
  if (input.access === 'readwrite') assertMayWrite(principal, 'a `readwrite` storage link');
  const path = input.path === undefined ? undefined : parseFilePath(input.path);
  const workspace = await readable(services, principal, input.workspace_id);
  if (input.access === 'readwrite') assertMayChange(workspace, principal, 'write to');
  const links = services.files.links;
  const base = services.config.baseUrl;
  const now = services.clock.now();
  // The link dies with the token that makes it (server/storage-link/door.ts checks it).
  const maker = {
    agentId: principal.agentId,
    tokenId: principal.token?.tokenId ?? null,
    tokenExpiresAtMs: principal.token?.expiresAtMs ?? null,
  };
  const grant = (scope: string | undefined) =>
    StorageLinks.grant(input.access, workspace.workspaceId, maker, scope, now);
  const fileUrl = (file: string) =>
    `${StorageLinks.fileUrl(base, workspace.workspaceId, file)}?${links.sasToken(grant(file))}`;
  const expiresAt = grant(undefined).expiresAt.toISOString();
  // protocol.md, "Storage links": readwrite with a path is one file's link; else the workspace's.
  if (input.access === 'readwrite' && path !== undefined) {
    return { access: input.access, file_url: fileUrl(path), expires_at: expiresAt };
  }
  return {
    access: input.access,
    container_url: StorageLinks.containerUrl(base, workspace.workspaceId),
    sas_token: links.sasToken(grant(undefined)),
    ...(path === undefined ? {} : { file_url: fileUrl(path) }),
    expires_at: expiresAt,
  };
};
