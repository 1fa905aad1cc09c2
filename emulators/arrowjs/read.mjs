// node read.mjs FILE: reads an Arrow IPC file (Feather v2) with Apache
// Arrow's JavaScript implementation and prints one JSON line:
// {"fields": [{"name", "type"}], "rows": [...]} (bigints as strings).
// Compressed record batches (LZ4 frame, ZSTD: the tier's
// output.store.compression) are decoded by independent JavaScript codecs
// registered with the library (lz4js, fzstd).
import { readFileSync } from "node:fs";
import { tableFromIPC, compressionRegistry, CompressionType } from "apache-arrow";
import { decompress as zstd } from "fzstd";
import lz4 from "lz4js";

compressionRegistry.set(CompressionType.ZSTD, { decode: (b) => zstd(b) });
compressionRegistry.set(CompressionType.LZ4_FRAME, { decode: (b) => Uint8Array.from(lz4.decompress(b)) });

const table = tableFromIPC(readFileSync(process.argv[2]));
const fields = table.schema.fields.map((f) => ({ name: f.name, type: String(f.type) }));
const rows = table.toArray().map((r) => r.toJSON());
process.stdout.write(JSON.stringify({ fields, rows }, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
