// node read.mjs FILE: reads an Arrow IPC file (Feather v2) with Apache
// Arrow's JavaScript implementation and prints one JSON line:
// {"fields": [{"name", "type"}], "rows": [...]} (bigints as strings).
import { readFileSync } from "node:fs";
import { tableFromIPC } from "apache-arrow";

const table = tableFromIPC(readFileSync(process.argv[2]));
const fields = table.schema.fields.map((f) => ({ name: f.name, type: String(f.type) }));
const rows = table.toArray().map((r) => r.toJSON());
process.stdout.write(JSON.stringify({ fields, rows }, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
