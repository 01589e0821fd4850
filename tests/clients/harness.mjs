// What the Node client tests share: command-line arguments, starting a real sparrowd on free
// loopback ports, and running a list of named checks followed by a graceful-shutdown check.
import { spawn } from 'node:child_process';
import path from 'node:path';

export function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

// Starts sparrowd with port 0 (and gRPC on port 0 when `grpc`), and any further `args`,
// resolving with the ports it prints once it listens. `memoryPressure` 2: only the admin API
// moves the budget (the machine's own pressure must not decide the outcome); 0: no budget.
export function startServer(sparrowd, model, { grpc = false, args = [], memoryPressure = 2 } = {}) {
  const child = spawn(sparrowd, ['--model', model, '--port', '0', '--grpc-port', grpc ? '0' : '-1',
                                 '--threads', '1', '--memory-pressure', String(memoryPressure),
                                 '--hw-profile', 'none', ...args],
                      { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`sparrowd did not start:\n${stderr}`)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const http = out.match(/HTTP listening on http:\/\/[^:]+:(\d+)/);
      const g = out.match(/gRPC listening on \S+:(\d+)/);
      if (http && (g || !grpc)) {
        clearTimeout(timer);
        resolve({ child, port: Number(http[1]), grpcPort: g ? Number(g[1]) : 0,
                  stderr: () => stderr });
      }
    });
    child.on('exit', (code) => reject(new Error(`sparrowd exited with ${code}:\n${stderr}`)));
  });
}

// Stops a server started by startServer with SIGTERM; resolves with its exit code.
export function stopServer(server) {
  return new Promise((resolve) => {
    server.child.removeAllListeners('exit');
    server.child.on('exit', (code) => resolve(code));
    server.child.kill('SIGTERM');
  });
}

// Runs each { name, fn } with `args`, then stops the server with SIGTERM (it must exit 0) and
// exits the process: 0 when everything passed, 1 otherwise.
export async function runChecks(tests, args, server) {
  let failed = 0;
  for (const t of tests) {
    try {
      await t.fn(...args);
      console.log(`ok   ${t.name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name}\n     ${e.stack ?? e}`);
    }
  }
  const exitCode = await stopServer(server);
  if (exitCode !== 0) {
    failed++;
    console.log(`FAIL sparrowd exited with ${exitCode} after SIGTERM\n${server.stderr()}`);
  } else {
    console.log('ok   sparrowd exits 0 on SIGTERM');
  }
  console.log(failed ? `${failed} failed` : 'all passed');
  process.exit(failed ? 1 : 0);
}

// Imports an npm package the tests need, or exits 77 (skipped) when `npm ci` has not run.
export async function importOrSkip(name) {
  try {
    return await import(name);
  } catch {
    console.log(`SKIP: ${name} is not installed (run "npm ci" in tests/clients)`);
    process.exit(77);
  }
}

// @grpc/grpc-js with sparrow.proto loaded at run time: { grpc, protoLoader, pkg }.
export async function loadSparrowProto(protoPath) {
  const grpc = await importOrSkip('@grpc/grpc-js');
  const protoLoader = await importOrSkip('@grpc/proto-loader');
  const def = protoLoader.loadSync(path.basename(protoPath), {
    includeDirs: [path.dirname(path.dirname(path.dirname(protoPath)))].concat(
      [path.dirname(protoPath)]),
    keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
  });
  return { grpc, protoLoader, pkg: grpc.loadPackageDefinition(def) };
}

// The whole stream of one server-streaming call, or the error that ended it.
export function collect(call) {
  return new Promise((resolve) => {
    const messages = [];
    call.on('data', (m) => messages.push(m));
    call.on('error', (error) => resolve({ messages, error }));
    call.on('end', () => resolve({ messages, error: null }));
  });
}
