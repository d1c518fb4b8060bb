import { Module } from '@nestjs/common';
import { ArchiveRecordsService } from './archive-records.service';
import { ArchivesRepository } from './archives.repository';

/** The archive tables without the API: imported by ArchivesModule and by the device gateway. */
@Module({
  providers: [ArchivesRepository, ArchiveRecordsService],
  exports: [ArchivesRepository, ArchiveRecordsService],
})
export class ArchiveRecordsModule {}
