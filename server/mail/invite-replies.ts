import type { Services } from '../../actors/kernel/services.ts';
import { answerReplyToInvite } from '../../actors/workspaces/email-invite-replies.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { invoke } from '../invoke.ts';
import type { InboundMail } from './inbound.ts';

/**
 * A reply to an email invite (`invite-<key>@MAIL_DOMAIN`): from the invited address, it signs
 * up a new agent (`name: ...`, through sign_up as every door runs it) or names one
 * (`agent_id: ...`), and makes it a member (actors/workspaces/email-invite-replies.ts).
 */
export async function answerInviteReply(
  services: Services,
  mail: InboundMail,
  key: string,
): Promise<void> {
  await answerReplyToInvite(services, mail, key, async (name) => {
    const signal = AbortSignal.timeout(30_000);
    return (await invoke(services, OPERATIONS.sign_up, { name }, { token: undefined, signal })) as {
      agent_id: string;
      name: string;
      api_token: string;
    };
  });
}
