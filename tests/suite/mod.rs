mod cli_mcp;
mod interop_servers;
mod pool;
mod serve;
