import { createMailAccount, privateAddress } from '../../actors/email/accounts.ts';
import {
  checkMailSignUpCode,
  recordMailSignUpAgent,
  startMailSignUp,
} from '../../actors/email/sign-ups.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { ServiceError, toProblem } from '../../protocol/errors.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { asServiceError } from '../http/problem.ts';
import { invoke } from '../invoke.ts';
import { answer, asYaml } from './answers.ts';
import { parseCommandBody } from './commands.ts';
import type { InboundMail } from './inbound.ts';
import { admitMailSignUp, type MailSignUpLimits } from './sign-up-limits.ts';

/**
 * Mail to the join address: subject `sign-up` with `name: <agent_name>` starts a sign-up (a
 * 6-digit code to the From address); a message holding a 6-digit number is the code of the
 * sender's pending sign-up (a reply's subject, `Re: sign-up` without its prefix, is `sign-up`
 * too, so the body decides). Everything is answered to the From address only, and only about
 * its own sign-up. Starting one counts against the doors' sign-up limits (`limits`); past them
 * it is not answered: an answer to each refused start would mail any From an attacker writes.
 */
export async function joinByMail(
  services: Services,
  mail: InboundMail,
  log: (message: string) => void,
  limits?: MailSignUpLimits,
): Promise<void> {
  const from = mail.from;
  if (from === null) return;
  const isSignUp = mail.subject.trim().toLowerCase() === 'sign-up';
  const named = isSignUp ? nameIn(services, mail.text) : { name: undefined };
  const holdsCode = /(?<!\d)\d{6}(?!\d)/.test(mail.text);
  if (isSignUp && (named.name !== undefined || !holdsCode)) {
    const name = named.name;
    if (name === undefined) {
      await answer(services, mail, from, {
        kind: 'sign_up_refused',
        text:
          named.problem ??
          'Nothing was started: the body must be one line, `name: <agent_name>`.\n',
      });
      return;
    }
    try {
      await admitMailSignUp(limits, mail);
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'rate_limited') throw error;
      log(`mail: sign-up from ${from} via ${mail.remoteIp} past the sign-up limits, not answered`);
      return;
    }
    const started = await startMailSignUp(services, from, name);
    if (started.kind === 'silent') {
      log(`mail: sign-up from ${from} over the hourly limit, not answered`);
      return;
    }
    await answer(services, mail, from, {
      kind: started.kind === 'code' ? 'sign_up_code' : 'sign_up_refused',
      text:
        started.kind === 'code'
          ? `Your sign-up code is ${started.code}\n\nReply to this email with the code to finish signing up. It is good for one hour; five wrong codes void it.\n`
          : asYaml(
              toProblem(
                new ServiceError(
                  'rate_limited',
                  'Too many sign-ups from this address in the last hour; try again in an hour. Further sign-ups this hour get no answer.',
                ),
                services.config.baseUrl,
              ),
            ),
    });
    return;
  }
  // Mail without a code (a thank-you, an out-of-office) is no wrong code: it is not answered.
  if (!holdsCode) return;
  const check = await checkMailSignUpCode(services, from, mail.text);
  if (check.kind === 'none') return;
  if (check.kind === 'wrong') {
    await answer(services, mail, from, {
      kind: 'sign_up_refused',
      text:
        check.left > 0
          ? `That is not the code. ${check.left} tries are left.\n`
          : 'That is not the code, and the sign-up is void now. Start again with subject `sign-up`.\n',
    });
    return;
  }
  try {
    const signedUp = (await invoke(
      services,
      OPERATIONS.sign_up,
      { name: check.name },
      {
        token: undefined,
        signal: new AbortController().signal,
      },
    )) as { agent_id: string; api_token: string; name: string };
    const account = await createMailAccount(services.db(), services, {
      agentId: signedUp.agent_id,
      senderAddress: from,
    });
    await recordMailSignUpAgent(services, check.signupId, signedUp.agent_id);
    await answer(services, mail, from, {
      kind: 'sign_up_done',
      agentId: signedUp.agent_id,
      // A reply is a command: it goes to the new private address, not back to the join address.
      replyTo: privateAddress(services, account),
      text: [
        'You are signed up. Send commands to your private address: subject = the command name,',
        'body = YAML of its input (send `help` for the list). Keep the address as carefully as a',
        'token: it identifies you, and answers go only to this address.',
        '',
        asYaml({
          private_address: privateAddress(services, account),
          agent_id: signedUp.agent_id,
          name: signedUp.name,
          api_token: signedUp.api_token,
          protocol: `${services.config.baseUrl}/mailgate/protocol`,
        }),
      ].join('\n'),
    });
  } catch (error) {
    await answer(services, mail, from, {
      kind: 'sign_up_refused',
      text: problemText(services, error, log),
    });
  }
}

/** The `name` of a sign-up's body, or why the body is not one. */
function nameIn(services: Services, text: string): { name?: string; problem?: string } {
  let body: Record<string, unknown>;
  try {
    body = parseCommandBody(text);
  } catch (error) {
    return {
      problem: asYaml(
        toProblem(
          asServiceError(error, () => undefined),
          'about:blank',
        ),
      ),
    };
  }
  return typeof body.name === 'string' ? { name: body.name } : {};
}

function problemText(services: Services, error: unknown, log?: (message: string) => void): string {
  return asYaml(
    toProblem(
      asServiceError(error, (e) => log?.(String(e))),
      services.config.baseUrl,
    ),
  );
}
