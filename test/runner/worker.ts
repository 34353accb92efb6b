/**
 * A test worker: a child process of test/run.ts that runs the test files it is handed, one at a
 * time, and reports what each printed and counted (./run-file.ts). At the end it closes what
 * the tests left open and says which suites skipped for want of PostgreSQL or a real client.
 */
import './uvu-defer.ts';
import { closeTestResources } from '../helpers/resources.ts';
import { clientSuitesSkipped } from '../helpers/real-clients.ts';
import { postgresSuitesSkipped } from '../helpers/storage.ts';
import { runFile } from './run-file.ts';
import type { ToParent, ToWorker } from './messages.ts';

const send = (message: ToParent) => process.send?.(message);

process.on('message', (message: ToWorker) => {
  void (async () => {
    if (message.type === 'run') {
      const result = await runFile(message.path, message.name, (text) =>
        send({ type: 'output', text }),
      );
      send({ type: 'result', result: { ...result, output: '' } });
    } else if (message.type === 'report') {
      send({ type: 'report', waitingOn: process.getActiveResourcesInfo() });
    } else if (message.type === 'end') {
      await closeTestResources();
      // Whatever a test left running must not keep the worker: it ends once the parent has this.
      const ended: ToParent = {
        type: 'ended',
        postgresSkipped: [...postgresSuitesSkipped()],
        clientsSkipped: [...clientSuitesSkipped()],
      };
      process.send?.(ended, () => process.exit(0));
    }
  })();
});
send({ type: 'ready' });
