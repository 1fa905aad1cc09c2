// node write.mjs FILE: writes an Arrow IPC file (Feather v2) with Apache
// Arrow's JavaScript implementation: columns id (int32), name (utf8),
// score (float64), tags (list<utf8>), 3 rows, the last name null.
import { writeFileSync } from "node:fs";
import { tableFromArrays, tableToIPC, vectorFromArray, List, Utf8, Field, Table } from "apache-arrow";

const tags = vectorFromArray([["a", "b"], [], ["c"]], new List(new Field("item", new Utf8(), true)));
const base = tableFromArrays({
  id: Int32Array.from([1, 2, 3]),
  name: ["one", "two", null],
  score: Float64Array.from([0.5, 1.5, 2.5]),
});
const table = new Table({ id: base.getChild("id"), name: base.getChild("name"), score: base.getChild("score"), tags });
writeFileSync(process.argv[2], tableToIPC(table, "file"));
