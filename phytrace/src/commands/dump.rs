pub struct DumpArgs;
