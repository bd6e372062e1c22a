export function loadConfig(path: string): Config {
  return JSON.parse(read(path));
}

export function save(c: Config): void {
  write(c);
}

export class Config {
  port = 8080;

  host(): string {
    return "localhost";
  }

  url(): string {
    return `http://${this.host()}:${this.port}`;
  }
}

function unused() {}
