export class Config {
  port = 8080;
  scheme = "https";

  url(): string {
    return `${this.scheme}://${this.host()}:${this.port}`;
  }

  host(): string {
    return "localhost";
  }
}

export function readConfig(path: string): Config {
  return JSON.parse(read(path));
}

export function save(c: Config): void {
  write(c);
}
