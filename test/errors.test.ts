import { describe, expect, it } from 'vitest';
import { storageError } from '../src/errors.js';

describe('storageError', () => {
  it('names a full disk, and keeps naming it when an inner call already mapped the failure', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    expect(storageError(enospc)).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503, message: 'Storage is unavailable: disk is full' });
    expect(storageError(storageError(enospc)).message).toBe('Storage is unavailable: disk is full');
    expect(storageError(Object.assign(new Error('EIO'), { code: 'EIO' })).message).toBe('Storage is unavailable: write failed (EIO)');
  });
});
