mod cli_mcp;
mod interop_clients;
mod interop_servers;
mod pool;
mod run;
mod serve;
