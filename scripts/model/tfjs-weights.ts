import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Reads the weights of a TensorFlow.js graph model (model.json + binary shards) without TF.js:
 * the shards are one byte stream cut into files, and each manifest entry takes
 * product(shape) × 4 bytes from it, in manifest order.
 */

interface ManifestWeight {
  name: string;
  shape: number[];
  dtype: string;
  quantization?: unknown;
}

interface ManifestGroup {
  paths: string[];
  weights: ManifestWeight[];
}

export interface GraphNodeJson {
  name: string;
  op: string;
  input?: string[];
}

export interface TfjsModelJson {
  modelTopology: { node: GraphNodeJson[] };
  weightsManifest: ManifestGroup[];
}

interface WeightEntry {
  shape: number[];
  dtype: 'float32' | 'int32';
  bytes: Buffer;
}

export class TfjsWeights {
  private constructor(
    readonly model: TfjsModelJson,
    private readonly entries: Map<string, WeightEntry>,
  ) {}

  static async load(dir: string): Promise<TfjsWeights> {
    const model = JSON.parse(await readFile(path.join(dir, 'model.json'), 'utf8')) as TfjsModelJson;
    if (!Array.isArray(model.weightsManifest) || !Array.isArray(model.modelTopology?.node)) {
      throw new Error(`${dir}/model.json is not a TF.js graph model`);
    }
    const entries = new Map<string, WeightEntry>();
    for (const group of model.weightsManifest) {
      const data = Buffer.concat(await Promise.all(group.paths.map((p) => readFile(path.join(dir, p)))));
      let offset = 0;
      for (const w of group.weights) {
        // Quantized or 8-byte weights would need decoding this reader does not do; better to stop
        // than to hand the graph builder misread numbers.
        if (w.quantization !== undefined) throw new Error(`weight ${w.name} is quantized; not supported`);
        if (w.dtype !== 'float32' && w.dtype !== 'int32') throw new Error(`weight ${w.name} has dtype ${w.dtype}; not supported`);
        const size = w.shape.reduce((a, b) => a * b, 1) * 4;
        if (offset + size > data.length) throw new Error(`weight ${w.name} runs past the end of its shards`);
        entries.set(w.name, { shape: w.shape, dtype: w.dtype, bytes: data.subarray(offset, offset + size) });
        offset += size;
      }
      if (offset !== data.length) {
        throw new Error(`shards ${group.paths.join(', ')} hold ${data.length} bytes but the manifest describes ${offset}`);
      }
    }
    return new TfjsWeights(model, entries);
  }

  private entry(name: string, shape: readonly number[], dtype: WeightEntry['dtype']): WeightEntry {
    const e = this.entries.get(name);
    if (!e) throw new Error(`weight not found in model.json: ${name}`);
    if (e.dtype !== dtype) throw new Error(`weight ${name}: expected ${dtype}, found ${e.dtype}`);
    if (e.shape.length !== shape.length || e.shape.some((d, i) => d !== shape[i])) {
      throw new Error(`weight ${name}: expected shape [${shape.join(', ')}], found [${e.shape.join(', ')}]`);
    }
    return e;
  }

  /** A copy, so the result is 4-byte aligned whatever the shard buffer's offset. */
  float(name: string, shape: readonly number[]): Float32Array {
    const { bytes } = this.entry(name, shape, 'float32');
    const out = new Float32Array(bytes.length / 4);
    for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
    return out;
  }

  floatScalar(name: string): number {
    return this.float(name, [])[0]!;
  }

  intScalar(name: string): number {
    return this.entry(name, [], 'int32').bytes.readInt32LE(0);
  }

  countOps(op: string): number {
    return this.model.modelTopology.node.filter((n) => n.op === op).length;
  }
}
