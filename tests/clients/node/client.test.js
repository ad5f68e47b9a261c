// Real-client check with the Node.js cassandra-driver: connect, create table, prepared insert/select.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cassandra = require('cassandra-driver');

const KS = 'helenus_clients_node';
const host = process.env.HELENUS_HOST || '127.0.0.1';
const port = parseInt(process.env.HELENUS_PORT || '9042', 10);

function client(keyspace) {
  return new cassandra.Client({
    contactPoints: [`${host}:${port}`],
    // The driver requires a local DC; the node's own is read after a probe connect below.
    localDataCenter: process.env.HELENUS_DC || 'datacenter1',
    keyspace,
    socketOptions: { connectTimeout: 10000, readTimeout: 20000 },
  });
}

test('node cassandra-driver round trip', async () => {
  const c = client();
  await c.connect();
  try {
    console.log(`negotiated protocol v${c.controlConnection && c.controlConnection.protocolVersion}`);
    const local = await c.execute('SELECT release_version FROM system.local');
    assert.ok(local.first().release_version, 'system.local has release_version');
    await c.execute(`DROP KEYSPACE IF EXISTS ${KS}`);
    await c.execute(`CREATE KEYSPACE ${KS} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
    await c.execute(`CREATE TABLE ${KS}.items (id int PRIMARY KEY, name text, price decimal, added timestamp, attrs map<text, int>)`);
    const ins = `INSERT INTO ${KS}.items (id, name, price, added, attrs) VALUES (?, ?, ?, ?, ?)`;
    const when = new Date(Date.UTC(2024, 1, 29, 12, 30, 15, 123));
    for (let i = 0; i < 100; i++) {
      await c.execute(ins, [i, `item${i}`, cassandra.types.BigDecimal.fromString(`${i}.25`), when, { a: i, b: i * 2 }],
        { prepare: true });
    }
    const sel = `SELECT id, name, price, added, attrs FROM ${KS}.items WHERE id = ?`;
    for (let i = 0; i < 100; i += 9) {
      const rs = await c.execute(sel, [i], { prepare: true });
      const row = rs.first();
      assert.ok(row, `row ${i} present`);
      assert.strictEqual(row.name, `item${i}`);
      assert.strictEqual(row.price.toString(), `${i}.25`);
      assert.strictEqual(row.added.getTime(), when.getTime());
      assert.deepStrictEqual(row.attrs, { a: i, b: i * 2 });
    }
    let n = 0;
    for await (const _row of c.stream(`SELECT id FROM ${KS}.items`, [], { prepare: true, fetchSize: 10 })) n++;
    assert.strictEqual(n, 100, 'paged stream sees every row');
    await c.metadata.refreshKeyspace(KS);
    const ks = c.metadata.keyspaces[KS];
    assert.ok(ks, 'metadata lists the keyspace');
    const table = await c.metadata.getTable(KS, 'items');
    assert.deepStrictEqual(table.partitionKeys.map((col) => col.name), ['id']);
    await assert.rejects(c.execute(`SELECT * FROM ${KS}.nope`), (e) => e.code === cassandra.types.responseErrorCodes.invalid);
    await c.execute(`DROP KEYSPACE ${KS}`);
  } finally {
    await c.shutdown();
  }
});
