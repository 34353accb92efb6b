import type { Services } from '../../actors/kernel/services.ts';
import { answerReplyToInvite } from '../../actors/workspaces/email-invite-replies.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { invoke } from '../invoke.ts';
import type { InboundMail } from './inbound.ts';
import { admitMailSignUp, type MailSignUpLimits } from './sign-up-limits.ts';

/**
 * A reply to an email invite (`invite-<key>@MAIL_DOMAIN`): from the invited address, it signs
 * up a new agent (`name: ...`, through sign_up as every door runs it) or names one
 * (`agent_id: ...`), and makes it a member (actors/workspaces/email-invite-replies.ts). A new
 * agent counts against the doors' sign-up limits (`limits`); past them none is made, and the
 * answer says why.
 */
export async function answerInviteReply(
  services: Services,
  mail: InboundMail,
  key: string,
  limits?: MailSignUpLimits,
): Promise<void> {
  await answerReplyToInvite(services, mail, key, async (name) => {
    await admitMailSignUp(limits, mail);
    const signal = AbortSignal.timeout(30_000);
    return (await invoke(services, OPERATIONS.sign_up, { name }, { token: undefined, signal })) as {
      agent_id: string;
      name: string;
      api_token: string;
    };
  });
}
