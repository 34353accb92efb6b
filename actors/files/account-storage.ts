import type { AccountSection } from '../kernel/account-sections.ts';
import type { Output } from '../kernel/handler.ts';
import { QUOTA_RULE, storageQuotaBytes } from './quota.ts';

/**
 * The storage part of the caller's account (`whoami`): every kept byte and what it is kept for,
 * against the quota (quota.ts, rule `every_kept_byte`).
 */
export const accountStorage = {
  key: 'storage',
  show: ({ storage }, services): Output<'whoami'>['storage'] => ({
    used_bytes: storage.kept + storage.staged + storage.reserved,
    quota_bytes: storageQuotaBytes(services),
    current_files_bytes: storage.current,
    older_versions_bytes: storage.kept - storage.current,
    staged_blocks_bytes: storage.staged,
    uploads_in_progress_bytes: storage.reserved,
    rule: QUOTA_RULE,
  }),
} satisfies AccountSection;
