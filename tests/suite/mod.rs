mod cli_mcp;
mod interop_clients;
mod interop_servers;
mod pool;
mod repl;
mod run;
mod serve;
mod snapshots;
