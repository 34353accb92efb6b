/**
 * Whether a process with this id runs: signal 0 checks without sending anything. EPERM means it
 * runs as another user; only ESRCH means there is none.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return true;
    throw error;
  }
}
