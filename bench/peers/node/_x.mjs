import { PgBoss } from 'pg-boss';
const boss = new PgBoss({ connectionString: 'postgres://postgres@127.0.0.1:5432/alk_peer_x', schedule: false, supervise: false });
await boss.start(); await boss.createQueue('bench');
const jobs = Array.from({ length: 50000 }, (_, i) => ({ data: { n: i } }));
for (let i = 0; i < jobs.length; i += 5000) await boss.insert('bench', jobs.slice(i, i + 5000));
await boss.stop({ graceful: false });
