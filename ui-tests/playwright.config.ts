/**
 * Browser tests against real JupyterLab servers in Debian's Chromium:
 * one server per GPU source (simulated, none), one without the server extension, one for training runs,
 * one with Jupyter's login on, one for the Experiment panel, one with the tests' fake NVML for idle GPU
 * holders, one tracking into a team's MLflow server with its authentication app, one watching a Ray cluster
 * on loopback, and a team's JupyterHub whose users' JupyterLab run their jobs through its air-jobs service.
 */
import type { PlaywrightTestConfig } from '@playwright/test';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

// Galata's base configuration is a CommonJS `module.exports` without typings, so it cannot be imported.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

// The servers listen on consecutive ports from JUPYTER_AIR_UI_PORT_BASE (default 8891), so two checkouts
// can run their browser tests side by side.
const PORT_BASE = Number(process.env.JUPYTER_AIR_UI_PORT_BASE ?? 8891);

/**
 * One new folder per test session for every server's AIR_HOME and state, made once in the main process (the
 * workers inherit the variable). Each server stops the resident processes of its AIR_HOME as it exits.
 */
process.env.JUPYTER_AIR_UI_ROOT ??= fs.mkdtempSync(path.join(os.tmpdir(), 'jupyter-air-ui-'));
export const UI_ROOT = process.env.JUPYTER_AIR_UI_ROOT;

/** ``UI_ROOT/<name>``, made owner-only if missing. */
function folder(name: string): string {
  const made = path.join(UI_ROOT, name);
  fs.mkdirSync(made, { recursive: true, mode: 0o700 });
  return made;
}

/** AIR_HOME of the server with simulated GPUs: its layout spec records runs there for the charts. */
export const SIMULATED_AIR_HOME = folder('simulated');

/** AIR_HOME of the Experiment panel's server: its spec starts a job there as a terminal would. */
export const EXPERIMENT_AIR_HOME = folder('experiment');

/** The compute processes of the fake NVML of the idle-holders server (`[[pid, bytes], ...]`), set by its spec. */
export const HOLDERS_NVML_FILE = path.join(folder('holders-nvml'), 'processes.json');

/** Where the sharing server's MLflow server keeps its data and writes `mlflow.json` (its URI, bob's password). */
process.env.JUPYTER_AIR_UI_SHARING_DIR = folder('sharing');
export const SHARING_DIR = process.env.JUPYTER_AIR_UI_SHARING_DIR;

/**
 * Where the team's JupyterHub keeps its state, its air-jobs service's jobs and users' folders, and writes
 * `team.json` (the hub's URL, the shared password, each user's API token): team_server.py makes it 0700.
 */
process.env.JUPYTER_AIR_UI_TEAM_DIR = folder('team');
export const TEAM_DIR = process.env.JUPYTER_AIR_UI_TEAM_DIR;

/** AIR_HOME of the server whose links are opened logged out: its spec creates a run in it. */
export const LINKS_AIR_HOME = folder('links');
export const LINKS_TOKEN = 'links-test-token';

/**
 * One JupyterLab server per project; `command` replaces `jlpm start`, `ready` (a path answering 2xx-3xx once
 * it is up) replaces `/lab`, `host` replaces `localhost`; `first` names a spec of the server's that runs before
 * its others (a project of its own, `<server>-first`, that the server's project depends on).
 */
const SERVERS: {
  name: string;
  port: number;
  env: Record<string, string>;
  first?: string;
  command?: string;
  ready?: string;
  host?: string;
}[] = [
  {
    // A kernel that ran a call, idle for 3 s on the simulated GPUs' memory, is an idle GPU holder.
    name: 'simulated',
    port: PORT_BASE,
    env: {
      JUPYTER_AIR_GPU_SOURCE: 'simulated',
      JUPYTER_AIR_UI_IDLE_MINUTES: '0.05',
      AIR_HOME: SIMULATED_AIR_HOME
    }
  },
  {
    name: 'no-gpu',
    port: PORT_BASE + 1,
    env: { JUPYTER_AIR_GPU_SOURCE: 'none', AIR_HOME: folder('no-gpu') }
  },
  {
    name: 'no-server-extension',
    port: PORT_BASE + 2,
    env: {
      JUPYTER_AIR_GPU_SOURCE: 'none',
      JUPYTER_AIR_UI_SERVER_EXTENSION: 'off',
      AIR_HOME: folder('no-server-extension')
    }
  },
  {
    // Notebooks that train with @distributed; MLflow's embedded store lives in a new temp folder.
    name: 'training',
    port: PORT_BASE + 3,
    env: {
      JUPYTER_AIR_GPU_SOURCE: 'none',
      AIR_HOME: folder('training')
    }
  },
  {
    // Jupyter's login on: a run link opened by a logged-out browser.
    name: 'links',
    port: PORT_BASE + 4,
    env: {
      JUPYTER_AIR_GPU_SOURCE: 'none',
      JUPYTER_AIR_UI_TOKEN: LINKS_TOKEN,
      AIR_HOME: LINKS_AIR_HOME
    }
  },
  {
    // The Experiment panel, the Logs view, runs on the GPU charts and the status bar: simulated GPUs
    // so that the charts show; runs and jobs in a new temp folder.
    name: 'experiment',
    port: PORT_BASE + 5,
    env: { JUPYTER_AIR_GPU_SOURCE: 'simulated', AIR_HOME: EXPERIMENT_AIR_HOME },
    // Its run on the GPU charts is the only one there: the other tests' runs, newer, would take its label.
    first: 'experiment-timeline'
  },
  {
    // The tests' fake NVML with one idle GPU, whose processes a test sets in a file: idle GPU holders.
    name: 'holders',
    port: PORT_BASE + 7,
    env: {
      JUPYTER_AIR_GPU_SOURCE: 'nvml',
      JUPYTER_AIR_UI_FAKE_NVML: HOLDERS_NVML_FILE,
      AIR_HOME: folder('holders')
    }
  },
  {
    // A team's MLflow server with its authentication app, tracked into as alice (sharing_server.py).
    name: 'sharing',
    port: PORT_BASE + 8,
    command: 'jlpm start:sharing',
    env: { AIR_HOME: folder('sharing-server') }
  },
  {
    // A head and two worker nodes of Ray on 127.0.0.1 (cluster_server.py starts and stops them).
    name: 'cluster',
    port: PORT_BASE + 6,
    command: 'jlpm start:cluster',
    env: { AIR_HOME: folder('cluster') }
  },
  {
    // A team's JupyterHub (team_server.py): users alice, bob and carol log in with one shared password and
    // get their own JupyterLab, whose jobs are the hub's air-jobs service's. The hub listens on 127.0.0.1 only.
    name: 'team',
    port: PORT_BASE + 9,
    command: 'jlpm start:team',
    ready: '/hub/api/',
    host: '127.0.0.1',
    env: {}
  }
];

/**
 * JUPYTER_AIR_UI_SERVERS=simulated,experiment starts only those servers (and their projects); by default every
 * server starts, since Playwright starts all of `webServer` whatever projects are chosen.
 */
const CHOSEN = (process.env.JUPYTER_AIR_UI_SERVERS ?? '').split(',').filter(Boolean);
const STARTED = SERVERS.filter(server => CHOSEN.length === 0 || CHOSEN.includes(server.name));

const config: PlaywrightTestConfig = {
  ...baseConfig,
  timeout: 90_000,
  // Two browsers at once: alone, one left half the two cores idle (its waits are on the page); test files run
  // apart from each other (each file's tests in order on one worker): 5.2 minutes against 6.9.
  workers: 2,
  retries: 0,
  reporter: [['list'], ['html', { open: 'never' }]],
  use: {
    ...baseConfig.use,
    video: 'off',
    trace: 'off',
    viewport: { width: 1440, height: 900 },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  },
  projects: STARTED.flatMap(server => {
    // `<server>.spec.ts` and `<server>-<topic>.spec.ts` run against that server.
    const use = { baseURL: `http://${server.host ?? 'localhost'}:${server.port}` };
    const all = new RegExp(`/${server.name}(-[a-z]+)*\\.spec\\.ts$`);
    if (server.first === undefined) {
      return [{ name: server.name, testMatch: all, use }];
    }
    const first = new RegExp(`/${server.first}\\.spec\\.ts$`);
    return [
      { name: `${server.name}-first`, testMatch: first, use },
      {
        name: server.name,
        testMatch: all,
        testIgnore: first,
        dependencies: [`${server.name}-first`],
        use
      }
    ];
  }),
  webServer: STARTED.map(server => ({
    command: server.command ?? 'jlpm start',
    url: `http://${server.host ?? 'localhost'}:${server.port}${server.ready ?? '/lab'}`,
    env: {
      ...(process.env as Record<string, string>),
      ...server.env,
      JUPYTER_AIR_UI_PORT: String(server.port)
    },
    timeout: 180_000,
    reuseExistingServer: false,
    // SIGTERM lets cluster_server.py stop its Ray nodes, and team_server.py its hub and users' servers; a
    // SIGKILL would leave some running.
    gracefulShutdown: { signal: 'SIGTERM' as const, timeout: 30_000 }
  }))
};

export default config;
