import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.js';
import { DATA_FORMAT, UserLayout } from '../../../src/store/jsonl/layout.js';
import { tempDir } from '../../support/helper.js';

describe('UserLayout', () => {
  it('stamps a directory with its data format, opens one of its own format or without a stamp (written before stamps), and refuses a newer one', async () => {
    const dataDir = await tempDir();
    await new UserLayout(dataDir, silentLogger()).init();
    expect(JSON.parse(await readFile(path.join(dataDir, 'format.json'), 'utf8'))).toEqual({ memorypool_data_format: DATA_FORMAT });
    await new UserLayout(dataDir, silentLogger()).init();

    await writeFile(path.join(dataDir, 'format.json'), JSON.stringify({ memorypool_data_format: DATA_FORMAT + 1 }));
    const refused = new UserLayout(dataDir, silentLogger()).init();
    await expect(refused).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    await expect(refused).rejects.toThrow(`is in format ${DATA_FORMAT + 1}, written by a newer memorypool; this build reads format ${DATA_FORMAT}`);
    // Left as it was: the newer build's data is not touched.
    expect(JSON.parse(await readFile(path.join(dataDir, 'format.json'), 'utf8'))).toEqual({ memorypool_data_format: DATA_FORMAT + 1 });

    await writeFile(path.join(dataDir, 'format.json'), 'not json');
    await expect(new UserLayout(dataDir, silentLogger()).init()).rejects.toThrow('does not name a data format this build knows');
  });

  it('names a sync file by the hash of the user\'s folder alone, outside users/', async () => {
    const dataDir = await tempDir();
    const layout = new UserLayout(dataDir, silentLogger());
    const folder = path.basename(layout.userDir('alice'));
    const hash = folder.slice(folder.lastIndexOf('-') + 1);
    expect(folder).toBe(`alice-${hash}`);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    expect(layout.syncFile('alice', 'lock')).toBe(path.join(dataDir, 'sync', `${hash}.lock`));
    expect(layout.memoriesFile('alice')).toBe(path.join(dataDir, 'users', folder, 'memories.jsonl'));
  });

  it('lists the users whose folder names them, and sees a folder named later', async () => {
    const dataDir = await tempDir();
    const layout = new UserLayout(dataDir, silentLogger());
    await layout.init();
    await layout.ensureUserDir('b');
    await layout.ensureUserDir('a');
    // A folder another process is creating: no user.json yet.
    const pending = path.join(layout.usersDir, 'c-0000000000000000');
    await mkdir(pending);
    expect(await layout.listUsers()).toEqual(['a', 'b']);
    await writeFile(path.join(pending, 'user.json'), JSON.stringify({ user_id: 'c' }) + '\n');
    expect(await layout.listUsers()).toEqual(['a', 'b', 'c']);
  });

  it('creates a forgotten user\'s folder again', async () => {
    const layout = new UserLayout(await tempDir(), silentLogger());
    await layout.init();
    await layout.ensureUserDir('a');
    await rm(layout.userDir('a'), { recursive: true });
    await layout.ensureUserDir('a');
    expect(await layout.listUsers()).toEqual([]);
    layout.forgetUserDir('a');
    await layout.ensureUserDir('a');
    expect(await layout.listUsers()).toEqual(['a']);
  });
});
