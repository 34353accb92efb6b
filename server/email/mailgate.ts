import { mailAccountOfAgent } from '../../actors/email/accounts.ts';
import type { ConfirmedRunner } from '../../actors/email/confirmations.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { resolveBinding } from '../../protocol/binding.ts';
import { restParameter, type Operation } from '../../protocol/operation.ts';
import { OPERATIONS, type OperationName } from '../../protocol/operations.ts';
import { decodeInput } from '../invoke.ts';
import { answer, asYaml } from './answers.ts';
import {
  commandCalls,
  commandFor,
  commandList,
  parseCommandBody,
  problemOf,
  runCommand,
  type CommandAnswer,
} from './commands.ts';
import {
  answerConfirmationReply,
  confirmationRepliedTo,
  requestConfirmation,
} from './confirmations.ts';
import type { InboundMail, MailRouter } from './inbound.ts';
import { answerInviteReply } from './invite-replies.ts';
import { serviceAddressAnswerer } from './service-address.ts';
import { joinByMail } from './sign-up.ts';
import { admitMailSignUp, type MailSignUpLimits } from './sign-up-limits.ts';

/**
 * What the door does with checked mail: sign-ups at the join address, commands at an agent's
 * private address (subject = command, body = YAML; generated from the operation table), and
 * replies to email invites. Answers go only to the address an account signed up from. A command
 * that changes anything runs at once only from aligned mail (DMARC pass for the From domain):
 * from any other it is held for confirmation, as binding commands always are, since a From is
 * free to forge. Every sign-up by mail counts against `limits` (the doors' shared sign-up limit).
 */
export function mailRouter(
  services: Services,
  log: (message: string) => void,
  limits?: MailSignUpLimits,
): MailRouter {
  const runner = confirmedCommandRunner(services, log);

  return {
    join: (mail) => joinByMail(services, mail, log, limits),
    invite: (mail, key) => answerInviteReply(services, mail, key, limits),
    service: serviceAddressAnswerer(services, log),
    async agent(mail, agentId) {
      const account = await mailAccountOfAgent(services.db(), agentId);
      const agent = account && (await services.agents.get(agentId));
      if (!account || !agent) return;
      // A stranger who learned the private address: nothing runs, nothing is sent to it.
      if (mail.from !== account.senderAddress) {
        log(`mail: ${mail.messageId} to agent ${agentId} from another address, ignored`);
        return;
      }
      const to = account.senderAddress;
      // A suspended agent's mail runs nothing (moderation): the answer says why.
      if (await services.suspensions.isSuspended(agentId)) {
        const refusal = new ServiceError(
          'unauthorized',
          'This agent is suspended by the operator: its commands do not run. Its changes feed says why; write to the operator (leave_feedback, no token needed) to ask.',
          { reason: 'suspended' },
        );
        await answer(services, mail, to, {
          agentId,
          text: asYaml(problemOf(services, refusal, log)),
        });
        return;
      }
      const confirmationId = confirmationRepliedTo(services, mail);
      if (confirmationId !== null) {
        const text = await answerConfirmationReply(services, mail, agentId, confirmationId, runner);
        await answer(services, mail, to, { agentId, text });
        return;
      }
      const name = mail.subject.trim().toLowerCase();
      const operation = commandFor(name, agent.principal);
      if (!operation) {
        const unknown =
          name === 'help'
            ? ''
            : asYaml(
                problemOf(
                  services,
                  new ServiceError(
                    'unknown_command',
                    `No command is called ${name || '(empty subject)'}.`,
                  ),
                  log,
                ),
              ) + '\n';
        await answer(services, mail, to, {
          agentId,
          text: unknown + commandList(services, agent.principal),
        });
        return;
      }
      let input: Record<string, unknown>;
      try {
        input = parseCommandBody(mail.text);
      } catch (error) {
        await answer(services, mail, to, {
          agentId,
          text: asYaml(problemOf(services, error, log)),
        });
        return;
      }
      const held = holdReason(operation, mail);
      try {
        // A sign-up by mail counts against the doors' one sign-up limit, held or run.
        if (operation.signUpLimited) await admitMailSignUp(limits, mail);
        if (held === 'unaligned' && takesBytes(operation)) {
          throw new ServiceError(
            'forbidden',
            `${operation.name} takes attachments, which a held command cannot keep; this message did not pass DMARC alignment for your address, so it cannot run at once. Send it again signed by your domain (DKIM or SPF aligned with your From), or use HTTP or MCP.`,
            { reason: 'sender_not_aligned' },
          );
        }
        // Checked before it is held: a command that cannot run is refused now, not confirmed.
        if (held !== null) {
          for (const call of commandCalls(operation, input, mail.attachments)) {
            decodeInput(operation.input, call.fields, restParameter(operation.path));
          }
        }
      } catch (error) {
        await answer(services, mail, to, {
          agentId,
          text: asYaml(problemOf(services, error, log)),
        });
        return;
      }
      if (held !== null) {
        const request = await requestConfirmation(services, agentId, operation.name, input, held);
        await answer(services, mail, to, { agentId, kind: 'confirmation_request', ...request });
        return;
      }
      const outcomes = await runAll(
        services,
        operation,
        agent.principal,
        input,
        mail.attachments,
        log,
      );
      await answer(services, mail, to, {
        agentId,
        text: asYaml(outcomes.length === 1 ? outcomes[0]!.value : outcomes.map((o) => o.value)),
        attachments: outcomes.flatMap((outcome) =>
          outcome.attachment ? [outcome.attachment] : [],
        ),
      });
    },
  };
}

/**
 * Why a command waits for a confirmation instead of running, or null when it runs now: it
 * binds (always held), or it changes something and its mail is not aligned (its From may be
 * forged: it is held, and the request goes to the confirmed address, never to the sender).
 * A read runs: its answer goes only to the confirmed address, whoever sent it.
 */
export function holdReason(
  operation: Operation,
  mail: Pick<InboundMail, 'auth'>,
): 'binding' | 'unaligned' | null {
  if (operation.binds === true) return 'binding';
  if (operation.readOnly !== true && !mail.auth.aligned) return 'unaligned';
  return null;
}

function takesBytes(operation: Operation): boolean {
  return resolveBinding(operation.method, operation.binding).body.kind === 'bytes';
}

/**
 * Runs a command held for confirmation, as its agent, once it is confirmed: by a reply here, or
 * by its link over HTTP (`confirm_mail_command`, which finds it as `services.confirmedRunner`).
 * One runner for both, through `run()` as every door: the same decoding, bounds and checks.
 */
export function confirmedCommandRunner(
  services: Services,
  log: (message: string) => void,
): ConfirmedRunner {
  return async (agentId, name, input) => {
    const agent = await services.agents.get(agentId);
    const operation = OPERATIONS[name as OperationName];
    if (!agent || !operation) return { detail: 'The agent or the command is gone.' };
    const outcomes = await runAll(services, operation, agent.principal, input, [], log);
    return outcomes.length === 1 ? outcomes[0]!.value : outcomes.map((outcome) => outcome.value);
  };
}

/** Runs a command once per attachment (once when it takes none); a refusal is a problem. */
async function runAll(
  services: Services,
  operation: Operation,
  principal: Parameters<typeof runCommand>[2],
  input: Record<string, unknown>,
  attachments: InboundMail['attachments'],
  log: (message: string) => void,
): Promise<CommandAnswer[]> {
  let calls;
  try {
    calls = commandCalls(operation, input, attachments);
  } catch (error) {
    return [{ value: problemOf(services, error, log) }];
  }
  const outcomes: CommandAnswer[] = [];
  for (const call of calls) {
    outcomes.push(await runCommand(services, operation, principal, call, log));
  }
  return outcomes;
}
