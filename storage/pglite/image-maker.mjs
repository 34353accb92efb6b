// Run as a short-lived child process by image.ts: fills the empty directory argv[2]
// with a new PGlite database, copied from the image at argv[3]; when there is no image yet,
// runs initdb and saves its image there for next time. initdb inside WebAssembly takes the
// process to ~900 MB: here, that memory goes back to the system when this process ends.
import { PGlite } from '@electric-sql/pglite';
import { Blob, Buffer } from 'node:buffer';
import process from 'node:process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const [target, imagePath] = process.argv.slice(2);
if (!target || !imagePath) throw new Error('usage: image-maker.mjs <empty dir> <image>');

async function fromImage() {
  let image;
  try {
    image = readFileSync(imagePath);
  } catch {
    return false;
  }
  try {
    const db = await PGlite.create({ dataDir: target, loadDataDir: new Blob([image]) });
    await db.close();
    return true;
  } catch {
    // A damaged image: forget it, and make the database the long way.
    rmSync(imagePath, { force: true });
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target);
    return false;
  }
}

if (!(await fromImage())) {
  const db = await PGlite.create({ dataDir: target });
  await db.exec('checkpoint');
  const image = await db.dumpDataDir('gzip');
  await db.close();
  try {
    // Written aside and renamed, so that a process starting at the same time never reads half.
    mkdirSync(dirname(imagePath), { recursive: true });
    const partial = `${imagePath}.${process.pid}.partial`;
    writeFileSync(partial, Buffer.from(await image.arrayBuffer()));
    renameSync(partial, imagePath);
  } catch {
    // The image only saves time next time; a read-only cache costs nothing else.
  }
}
