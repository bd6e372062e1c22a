public class Config
{
    public int Port { get; set; } = 8080;

    public string Host() => "localhost";

    public string Url() => $"http://{Host()}:{Port}";

    public static Config LoadConfig(string path) => new Config();

    public void Save(string path) { }

    private void Unused() { }
}
