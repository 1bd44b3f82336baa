import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

// onnx-proto is CommonJS whose exports Node cannot detect statically, so only the default import
// works from ESM.
const { onnx } = onnxProto;

export const FLOAT = onnx.TensorProto.DataType.FLOAT;
export const INT64 = onnx.TensorProto.DataType.INT64;

export type AttrValue = number | number[] | { floats: number[] } | { float: number };

/**
 * Just enough of an ONNX graph builder for a feed-forward network: every op returns the name of its
 * output, so the model code reads like the maths. Tensor names are generated and unique.
 */
export class GraphBuilder {
  private readonly nodes: OnnxTypes.INodeProto[] = [];
  private readonly initializers: OnnxTypes.ITensorProto[] = [];
  private readonly inputs: OnnxTypes.IValueInfoProto[] = [];
  private readonly outputs: OnnxTypes.IValueInfoProto[] = [];
  private readonly used = new Set<string>();
  private counter = 0;

  private fresh(hint: string): string {
    const base = hint.replace(/[^A-Za-z0-9_./]/g, '_');
    let name = base;
    while (this.used.has(name)) name = `${base}_${++this.counter}`;
    this.used.add(name);
    return name;
  }

  input(name: string, elemType: number, dims: (number | string)[]): string {
    this.used.add(name);
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  /** Renames `tensor` to the graph output `name` with an Identity, so outputs get stable names. */
  output(tensor: string, name: string, elemType: number, dims: (number | string)[]): void {
    this.used.add(name);
    this.nodes.push({ opType: 'Identity', input: [tensor], output: [name], name: `${name}_identity` });
    this.outputs.push(valueInfo(name, elemType, dims));
  }

  floatTensor(hint: string, dims: number[], data: Float32Array): string {
    const size = dims.reduce((a, b) => a * b, 1);
    if (size !== data.length) throw new Error(`${hint}: ${data.length} values for dims [${dims.join(', ')}]`);
    const name = this.fresh(hint);
    const raw = Buffer.alloc(data.length * 4);
    for (let i = 0; i < data.length; i++) raw.writeFloatLE(data[i]!, i * 4);
    this.initializers.push({ name, dims, dataType: FLOAT, rawData: raw });
    return name;
  }

  floatConst(hint: string, value: number): string {
    return this.floatTensor(hint, [], Float32Array.of(value));
  }

  int64Tensor(hint: string, dims: number[], values: number[]): string {
    const name = this.fresh(hint);
    const raw = Buffer.alloc(values.length * 8);
    values.forEach((v, i) => raw.writeBigInt64LE(BigInt(v), i * 8));
    this.initializers.push({ name, dims, dataType: INT64, rawData: raw });
    return name;
  }

  /** A 1-D int64 constant, the form opset 13 wants for axes, shapes and split sizes. */
  ints(hint: string, values: number[]): string {
    return this.int64Tensor(hint, [values.length], values);
  }

  opMulti(opType: string, inputs: string[], outputs: number, attrs: Record<string, AttrValue> = {}, hint = opType): string[] {
    const outNames = Array.from({ length: outputs }, (_, i) => this.fresh(`${hint}${outputs > 1 ? `_out${i}` : ''}`));
    this.nodes.push({
      opType,
      input: inputs,
      output: outNames,
      name: this.fresh(`${hint}_node`),
      attribute: Object.entries(attrs).map(([name, value]) => attribute(name, value)),
    });
    return outNames;
  }

  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, hint = opType): string {
    return this.opMulti(opType, inputs, 1, attrs, hint)[0]!;
  }

  encode(opts: { graphName: string; opset: number; producer: string; docString: string; metadata: Record<string, string> }): Uint8Array {
    const model: OnnxTypes.IModelProto = {
      // IR 7 is the version that goes with opset 13; older runtimes reject newer IR numbers.
      irVersion: 7,
      opsetImport: [{ domain: '', version: opts.opset }],
      producerName: opts.producer,
      docString: opts.docString,
      metadataProps: Object.entries(opts.metadata).map(([key, value]) => ({ key, value })),
      graph: {
        name: opts.graphName,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      },
    };
    const err = onnx.ModelProto.verify(model);
    if (err) throw new Error(`invalid ModelProto: ${err}`);
    return onnx.ModelProto.encode(model).finish();
  }

  get nodeCount(): number {
    return this.nodes.length;
  }
}

function valueInfo(name: string, elemType: number, dims: (number | string)[]): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttrValue): OnnxTypes.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof value === 'number') return { name, type: T.INT, i: value };
  if (Array.isArray(value)) return { name, type: T.INTS, ints: value };
  if ('floats' in value) return { name, type: T.FLOATS, floats: value.floats };
  return { name, type: T.FLOAT, f: value.float };
}
