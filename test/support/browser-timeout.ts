// The browser project's tests drive Chromium through whole pages: a minute each (testTimeout is global in jest).
jest.setTimeout(60_000);
